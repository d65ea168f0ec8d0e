"""Reductions composed in Python from the dispatcher ops: nanmean, cov, corrcoef, the
trapezoidal integrals and segment_reduce.  Mirrors the composites at::native::nanmean
(ATen/native/ReduceOps.cpp), cov / corrcoef (ATen/native/Correlation.cpp), trapezoid /
cumulative_trapezoid (ATen/native/Integration.cpp) and the behaviour of segment_reduce's
kernel (ATen/native/SegmentReduce.cpp); autograd differentiates through the ops they call."""
import builtins
import warnings

from ._out_arguments import write_cast as _write_cast
from . import _C
from . import overrides as _overrides
from ._functions import _write_out
from ._native_signature import native
from ._tensor_types import _NAME


@native
def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The mean of the non-NaN elements over dim (all of them when dim is None): nansum
    divided by the count of non-NaN elements; NaN where every element is NaN."""
    if not (input.is_floating_point() or input.is_complex()):
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {_NAME[input.dtype]}")
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError("nanmean(): could not infer output dtype. Optional dtype must be "
                           f"either a floating point or complex dtype. Got: {_NAME[dtype]}")
    count = input.isnan().logical_not().sum(dim, keepdim=keepdim)
    result = _C._functions["nansum"](input, dim, keepdim=keepdim, dtype=dtype).div(count)
    return _write_cast(result, out)


def _check_weights(kind, w, observations, want, want_name):
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {kind} to have one or fewer dimensions but got "
                           f"{kind} with {w.dim()} dimensions")
    if not want(w):
        raise RuntimeError(f"cov(): expected {kind} to have {want_name} dtype but got {kind} "
                           f"with {_NAME[w.dtype]} dtype")
    if w.numel() != observations:
        raise RuntimeError(f"cov(): expected {kind} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {observations}")
    if observations and bool(w.min() < 0):
        raise RuntimeError(f"cov(): {kind} cannot be negative")


@native
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of input (observations in its
    columns; a 1-D input is one variable), weighted by the observation counts fweights and
    the importance weights aweights; a 0-D result for one variable.  at::native::cov."""
    if input.dim() > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    if input.dtype == _C.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.view(1, -1) if input.dim() < 2 else input
    observations = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, observations,
                       lambda t: not (t.is_floating_point() or t.is_complex() or
                                      t.dtype == _C.bool), "integral")
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, observations, lambda t: t.is_floating_point(),
                       "floating point")
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = _C.tensor(observations, dtype=_C.int64, device=input.device)
        avg = x.sum(1) / w_sum
    else:
        w_sum = w.sum()
        if not bool(w_sum != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = (x * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm_factor = w_sum - correction
    if bool(norm_factor <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm_factor = _C._functions["zeros_like"](norm_factor)   # +0, not -0: c / 0 is +inf
    x = x - avg.unsqueeze(1)
    c = x.mm((x if w is None else x * w).t().conj())
    return c.true_divide(norm_factor).squeeze()


@native
def corrcoef(input):
    """The Pearson correlation coefficients of the variables in the rows of input: cov
    normalised by the standard deviations and clipped to [-1, 1]."""
    if input.dim() > 2:
        raise RuntimeError("corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    stddev = c.diagonal().sqrt()
    c = c / stddev.view(-1, 1)
    c = c / stddev.view(1, -1)
    if c.is_complex():   # PyTorch clips the real and imaginary parts apart
        return _C._functions["complex"](c.real.clip(-1, 1), c.imag.clip(-1, 1))
    return c.clip(-1, 1)


def _trapezoid_dx(name, y, x, dx, dim):
    """The spacing of the samples along dim: a number, or x's differences viewed to broadcast
    against y's neighbour sums (a 1-D x lies along dim; a shorter x gets leading 1s)."""
    if x is not None and dx is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got both x "
                        "and dx")
    if x is None:
        dx = 1 if dx is None else dx
        if isinstance(dx, (bool, complex)):
            raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")
        if y.dtype == _C.bool:
            raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not "
                               "supported")
        return float(dx)
    if y.dtype == _C.bool or x.dtype == _C.bool:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           "supported")
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        x = x.view([x.shape[0] if d == dim else 1 for d in range(y.dim())])
    elif x.dim() < y.dim():
        x = x.view([1] * (y.dim() - x.dim()) + list(x.shape))
    left, right = _neighbours(x, dim)
    return right - left


def _neighbours(t, dim):
    """t[..., :-1] and t[..., 1:] along dim (both empty for no samples)."""
    n = t.shape[dim]
    return t.narrow(dim, 0, max(n - 1, 0)), t.narrow(dim, min(n, 1), max(n - 1, 0))


def _pair_sums(y, dim):
    left, right = _neighbours(y, dim)
    return left + right


@native
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of y along dim by the trapezoidal rule, the samples at x (or dx apart);
    0 for no samples, as NumPy's."""
    return _trapezoid(y, x, dx, dim)


@native
def trapz(y, x=None, *, dx=None, dim=-1):
    """trapezoid under its older name."""
    return _trapezoid(y, x, dx, dim)


def _trapezoid(y, x, dx, dim):
    if y.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    dim = dim + y.dim() if dim < 0 else dim
    if y.shape[dim] == 0:
        return _C._functions["zeros"]([s for d, s in enumerate(y.shape) if d != dim],
                                      dtype=y.dtype, device=y.device)
    spacing = _trapezoid_dx("trapezoid", y, x, dx, dim)
    if isinstance(spacing, float):   # at::native's sum - (first + last) / 2 form
        return (y.sum(dim) - (y.select(dim, 0) + y.select(dim, -1)) * 0.5) * spacing
    return (spacing * _pair_sums(y, dim) / 2.0).sum(dim)


@native
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral of y along dim (one element fewer than y there)."""
    if y.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    dim = dim + y.dim() if dim < 0 else dim
    spacing = _trapezoid_dx("cumulative_trapezoid", y, x, dx, dim)
    return (spacing / 2.0 * _pair_sums(y, dim)).cumsum(dim)


# ---- histograms ----

def _histogram_edges(column, bins, lo_hi, d):
    """The bin edges of one dimension: the given tensor, or `bins` equal bins over lo_hi
    (default: the column's min and max, widened by 0.5 each way when they are equal)."""
    if isinstance(bins, _C.TensorBase):
        if bins.dim() != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but "
                               f"got {bins.dim()} dimensions in the bins tensor for dimension "
                               f"{d}")
        return bins.to(column.dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension "
                           f"{d}")
    if lo_hi is not None:
        lo, hi = float(lo_hi[0]), float(lo_hi[1])
    elif column.numel():
        lo, hi = column.min().item(), column.max().item()
    else:
        lo, hi = 0.0, 1.0
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo} max "
                           f"{hi} for dimension {d}")
    if lo != lo or hi != hi or lo in (float("inf"), -float("inf")) or \
            hi in (float("inf"), -float("inf")):
        raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{lo}, {hi}] is not "
                           "finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return _C._functions["linspace"](lo, hi, bins + 1, dtype=column.dtype,
                                     device=column.device)


@native
def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """The D-dimensional histogram of the points input[..., D]: counts (or summed weights) per
    bin, a bin holding its left edge and the last one also its right edge; points outside
    the edges (and NaN) are not counted.  density: divided by the total and the bin volume."""
    from .return_types import histogramdd as result_type
    if not input.is_floating_point():
        raise NotImplementedError(f'"histogramdd" not implemented for \'{_NAME[input.dtype]}\'')
    points = input.reshape(-1, input.shape[-1]) if input.dim() else input.reshape(1, 1)
    n, dims = points.shape
    if isinstance(bins, (int, _C.TensorBase)):
        bins = [bins] * dims
    ranges = None if range is None else [range[2 * d:2 * d + 2] for d in builtins.range(dims)]
    if weight is not None and tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the "
                           "same shape as the input tensor excluding its innermost dimension, "
                           f"but got input with shape {list(input.shape)} and weight with "
                           f"shape {list(weight.shape)}")
    edges, flat, valid = [], None, None
    for d in builtins.range(dims):
        column = points[:, d]
        e = _histogram_edges(column, bins[d], None if ranges is None else ranges[d], d)
        edges.append(e)
        nbins = e.numel() - 1
        index = _C._functions["searchsorted"](e, column, right=True) - 1
        index = index.masked_fill(column == e[-1], nbins - 1)   # the right edge is inside
        inside = (index >= 0) & (index < nbins)
        valid = inside if valid is None else valid & inside
        index = index.clamp(0, max(nbins - 1, 0))
        flat = index if flat is None else flat * nbins + index
    sizes = [e.numel() - 1 for e in edges]
    values = _C._functions["ones"](n, dtype=input.dtype, device=input.device) \
        if weight is None else weight.reshape(-1).to(input.dtype)
    values = values * valid.to(input.dtype)
    total = 1
    for size in sizes:
        total *= size
    hist = _C._functions["zeros"](total, dtype=input.dtype, device=input.device)
    hist = hist.index_add(0, flat, values).reshape(sizes)
    if density:
        volume = None
        for d, e in enumerate(edges):
            shape = [-1 if k == d else 1 for k in builtins.range(dims)]
            width = (e[1:] - e[:-1]).reshape(shape)
            volume = width if volume is None else volume * width
        hist = hist / (hist.sum() * volume)
    return result_type((hist, tuple(edges)))


@native
def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """The histogram of input's elements: (hist, bin_edges) for `bins` equal bins over range
    (default: input's min and max) or the given edges."""
    from .return_types import histogram as result_type
    if isinstance(bins, _C.TensorBase) and bins.dtype != input.dtype:
        raise RuntimeError("torch.histogram: input tensor and bins tensors should have the "
                           f"same dtype, but got input {input.dtype} and bins {bins.dtype}")
    hist, edges = histogramdd(input.reshape(-1, 1), [bins],
                              range=None if range is None else list(range),
                              weight=None if weight is None else weight.reshape(-1),
                              density=density)
    return _write_out(result_type((hist, edges[0])), out)



# ---- finite differences ----

def _slice_along(t, dim, start, stop):
    return t.narrow(dim, start, stop - start)


def _along(v, dim, ndim):
    """A 1-D tensor v shaped to broadcast along dim of an ndim-D tensor."""
    return v.reshape([-1 if k == dim else 1 for k in builtins.range(ndim)])


def _gradient_one(f, dim, spacing, edge_order):
    """d f / d x along dim by second-order central differences inside and one-sided ones of
    order edge_order at the ends; spacing a number (uniform steps) or the 1-D coordinates."""
    n, nd = f.shape[dim], f.dim()
    if isinstance(spacing, _C.TensorBase) and spacing.dim() == 1:
        x = spacing.to(f.dtype)
        if x.numel() != n:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device "
                               f"and to have as many elements as the input's dim {dim} ({n}), "
                               f"but got {x.numel()}")
        h = x[1:] - x[:-1]
        hl, hr = _along(h[:-1], dim, nd), _along(h[1:], dim, nd)
        left, mid, right = (_slice_along(f, dim, 0, n - 2), _slice_along(f, dim, 1, n - 1),
                            _slice_along(f, dim, 2, n))
        inside = (hl * hl * right - hr * hr * left + (hr * hr - hl * hl) * mid) / \
            (hl * hr * (hl + hr))
        h0, h1 = float(h[0]), float(h[-1])
        if edge_order == 1:
            first = (_slice_along(f, dim, 1, 2) - _slice_along(f, dim, 0, 1)) / h0
            last = (_slice_along(f, dim, n - 1, n) - _slice_along(f, dim, n - 2, n - 1)) / h1
        else:
            a, b = float(h[0]), float(h[1])
            first = (_slice_along(f, dim, 0, 1) * (-(2 * a + b) / (a * (a + b)))
                     + _slice_along(f, dim, 1, 2) * ((a + b) / (a * b))
                     + _slice_along(f, dim, 2, 3) * (-a / (b * (a + b))))
            a, b = float(h[-2]), float(h[-1])
            last = (_slice_along(f, dim, n - 3, n - 2) * (b / (a * (a + b)))
                    + _slice_along(f, dim, n - 2, n - 1) * (-(a + b) / (a * b))
                    + _slice_along(f, dim, n - 1, n) * ((2 * b + a) / (b * (a + b))))
        return _C._functions["cat"]([first, inside, last], dim)
    h = float(spacing)
    inside = (_slice_along(f, dim, 2, n) - _slice_along(f, dim, 0, n - 2)) / (2 * h)
    if edge_order == 1:
        first = (_slice_along(f, dim, 1, 2) - _slice_along(f, dim, 0, 1)) / h
        last = (_slice_along(f, dim, n - 1, n) - _slice_along(f, dim, n - 2, n - 1)) / h
    else:
        first = (-1.5 * _slice_along(f, dim, 0, 1) + 2 * _slice_along(f, dim, 1, 2)
                 - 0.5 * _slice_along(f, dim, 2, 3)) / h
        last = (0.5 * _slice_along(f, dim, n - 3, n - 2) - 2 * _slice_along(f, dim, n - 2, n - 1)
                + 1.5 * _slice_along(f, dim, n - 1, n)) / h
    return _C._functions["cat"]([first, inside, last], dim)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative of input along each dim in `dim` (all of them by default), one tensor
    per dim, as NumPy's gradient: spacing is one number for every dim, a number per dim or
    the coordinates of the samples (a 1-D tensor per dim)."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    given_dim = dim is not None
    dims = list(builtins.range(input.dim())) if dim is None else \
        [dim] if isinstance(dim, int) else list(dim)
    dims = [d + input.dim() if d < 0 else d for d in dims]
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            what = (f"'len(dim) = {len(dims)}'" if given_dim else
                    f"'self.dim() = {input.dim()}', since dim argument was not given")
            raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar, or "
                               f"a list of length equal to {what}, but got a list of length "
                               f"{len(spacing)}")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    f = input if input.is_floating_point() or input.is_complex() else \
        input.to(_C.get_default_dtype())
    return tuple(_gradient_one(f, d, s, edge_order) for d, s in zip(dims, spacings))

# ---- segment_reduce ----

# reduce name -> (the reduction over a segment's slots, the value of a padding slot)
_SEGMENT_REDUCTIONS = {"sum": ("sum", 0.0), "mean": ("sum", 0.0), "prod": ("prod", 1.0),
                       "max": ("amax", float("-inf")), "amax": ("amax", float("-inf")),
                       "min": ("amin", float("inf")), "amin": ("amin", float("inf"))}


@native
def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """data reduced over consecutive segments along axis.  lengths [*data.shape[:axis], S]
    (or offsets [..., S + 1]) cut each row along axis into S segments; the result has S in
    axis's place.  Each segment is gathered into a [.., S, longest, ..] block whose unused
    slots hold the reduction's identity, so one reduction over the block does every segment
    and autograd's formulas of sum / prod / amax / amin give the gradient (amax and amin
    share it among ties, as PyTorch's segment_reduce backward does).  initial joins every
    segment (mean: (sum + initial) / length, initial for an empty segment); without it an
    empty segment is 0 (sum), 1 (prod), nan (mean), -inf (max), inf (min)."""
    if reduce not in _SEGMENT_REDUCTIONS:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if not data.is_floating_point():
        raise NotImplementedError(f'"_segment_reduce_cpu" not implemented for '
                                  f"'{_NAME[data.dtype]}'")
    given, kind = (lengths, "lengths") if lengths is not None else (offsets, "offsets")
    if given.is_floating_point() or given.is_complex():
        raise NotImplementedError(f'"_segment_reduce_{kind}_cpu_kernel1" not implemented for '
                                  f"'{_NAME[given.dtype]}'")
    if data.dim() < given.dim():
        raise RuntimeError("Expected data.dim() >= lengths_value.dim() to be true, but got "
                           "false.  (Could this error message be improved?  If so, please "
                           "report an enhancement request to PyTorch.)")
    axis = axis + data.dim() if -data.dim() <= axis < 0 else axis
    if not 0 <= axis < data.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-data.dim()}, {data.dim() - 1}], but got {axis})")
    if given.dim() - 1 != axis:
        raise RuntimeError("segment_reduce(): Expected axis to be the last dimension of lengths "
                           f"but got {axis}.")
    lead, size = tuple(data.shape[:axis]), data.shape[axis]
    if tuple(given.shape[:-1]) != lead:
        raise RuntimeError(f"segment_reduce(): Expected {kind} of shape {[*lead, '*']}, got "
                           f"{list(given.shape)}")
    given = given.long()
    if lengths is not None:
        starts = lengths.long().cumsum(-1) - given
        if not unsafe and given.numel() == 0:
            raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() "
                               "== 0. Specify the reduction dim with the 'dim' argument.")
        if not unsafe and bool((given < 0).any()):
            raise RuntimeError("lengths contains negative value!")
        if not unsafe and bool((given.sum(-1) != size).any()):
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum "
                               "to data.size(lengths.dim()-1) when !unsafe.")
    else:
        starts, lengths = given[..., :-1], given[..., 1:] - given[..., :-1]
        if bool((lengths < 0).any()):
            raise RuntimeError("Expected segment_length >= 0 to be true, but got false.  (Could "
                               "this error message be improved?  If so, please report an "
                               "enhancement request to PyTorch.)")
        if given.numel() and bool(((given < 0) | (given > size)).any()):
            raise RuntimeError(f"segment_reduce(): offsets must lie in [0, {size}]")
    return _segment_reduce_blocks(data, reduce, starts, lengths.long(), axis, initial)


def _segment_reduce_blocks(data, reduce, starts, lengths, axis, initial):
    """segment_reduce's reduction (its docstring), the segments given as starts and lengths,
    both [*data.shape[:axis], S]."""
    from . import arange, cat, tensor, where
    op, identity = _SEGMENT_REDUCTIONS[reduce]
    lead, rest = list(data.shape[:axis]), list(data.shape[axis + 1:])
    p, r = 1, 1
    for n in lead:
        p *= n
    for n in rest:
        r *= n
    segs = lengths.shape[-1]
    flat = data.reshape(p, data.shape[axis], r)                       # [P, A, R]
    starts, lengths = starts.reshape(p, segs), lengths.reshape(p, segs)
    longest = builtins.max(int(lengths.max()) if lengths.numel() else 0, 1)
    slot = arange(longest)
    pos = starts.unsqueeze(-1) + slot                                # [P, S, L]
    used = slot < lengths.unsqueeze(-1)
    if flat.shape[1] == 0:   # a slot to point the unused ones at (cat keeps the graph)
        flat = cat([flat, flat.new_zeros((p, 1, r))], 1)
    pos = where(used, pos, 0).clamp(0, flat.shape[1] - 1)
    block = flat[arange(p).reshape(p, 1, 1), pos]                    # [P, S, L, R]
    block = where(used.unsqueeze(-1), block, tensor(identity, dtype=data.dtype))
    out = getattr(block, op)(2)                                      # [P, S, R]
    if initial is not None:
        if reduce in ("sum", "mean"):
            out = out + initial
        elif reduce == "prod":
            out = out * initial
        else:
            # where, not maximum: a segment's maximum equal to initial keeps all its gradient
            init = tensor(initial, dtype=data.dtype)
            out = where(out >= init if op == "amax" else out <= init, out, init)
    if reduce == "mean":
        count = lengths.unsqueeze(-1).to(data.dtype)
        if initial is None:
            out = out / count
        else:
            out = where(count > 0, out / count.clamp(min=1), tensor(initial, dtype=data.dtype))
    return out.reshape(lead + [segs] + rest)


@native
def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """torch.norm under ATen's name (both overloads: (self, p=2) over every element, and
    (self, p, dim, keepdim, dtype) with p None meaning 2).  PyTorch registers it only for
    sparse tensors and raises NotImplementedError on a strided one; here it is the norm of
    any tensor, the values PyTorch gives for the same tensor made sparse."""
    if not (input.is_floating_point() or input.is_complex()):
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {_NAME[input.dtype]} instead.")
    p = 2 if p is None else p
    if dim is None:
        return input.norm(p)
    return input.norm(p, dim, keepdim, dtype=dtype)


# each public function goes to __torch_function__ first (Note [Torch function])
_overrides._route_functions(globals())
