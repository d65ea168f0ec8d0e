"""Convolution, pooling, padding, interpolation, fold and grid sampling: the functional
entry points (torch.nn.functional).  pytorchlite.nn.functional re-exports them.

Every function validates its arguments with torch.nn.functional's messages and calls an
ATen operator (src/aten/native/conv.c, pool.c, resample.c); 1-D pooling goes through the
2-D kernels on an unsqueezed input, as PyTorch does.
"""
import functools
import inspect
import math
import operator

import pytorchlite as torch
from .._arg_check import check_arg
from .._native_signature import native_fault as _native_fault
from pytorchlite import _C, _ops_namespace, overrides as _overrides

_aten = _ops_namespace.aten_bindings

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "max_unpool1d", "max_unpool2d", "lp_pool1d",
    "adaptive_avg_pool3d", "max_unpool3d", "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices", "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "conv_tbc",
    "lp_pool2d", "lp_pool3d", "pad", "interpolate", "upsample", "upsample_nearest",
    "upsample_bilinear",
    "pixel_shuffle", "pixel_unshuffle", "unfold", "fold", "grid_sample", "affine_grid",
]


def _drop(t, dim):
    """t without its size-1 dimension `dim` (a reshape: differentiable, unlike squeeze)."""
    shape = list(t.shape)
    del shape[dim]
    return t.reshape(shape)


def _list(v, n):
    """An int or a sequence as a list (an int repeated n times)."""
    if isinstance(v, (list, tuple)):
        return list(v)
    return [v] * n


# ---- convolution ----------------------------------------------------------------------

def _check_conv_dim(input, nd, name):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got "
            f"input of size: {list(input.shape)}")


def _same_padding(input, weight, stride, dilation, nd):
    """'same' padding: symmetric where possible; the odd remainder padded on the right of
    the input first (PyTorch's _convolution_mode)."""
    if any(s != 1 for s in _list(stride, nd)):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    dil = _list(dilation, nd)
    left, extra = [], []
    for i in range(nd):
        total = dil[i] * (weight.shape[2 + i] - 1)
        left.append(total // 2)
        extra.append(total - 2 * (total // 2))
    if any(extra):
        pads = []
        for i in reversed(range(nd)):
            pads += [0, extra[i]]
        input = pad(input, pads)
    return input, left


def _type_name(t):
    """A CPU tensor's type as PyTorch's messages print it: torch.FloatTensor, or
    CPUComplexFloatType for the complex dtypes, which have no legacy tensor type."""
    from .._tensor_types import _NAME
    return f"CPU{_NAME[t.dtype]}Type" if t.is_complex() else f"torch.{_NAME[t.dtype]}Tensor"


def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                 groups):
    """aten::convolution, or for a complex input PyTorch's complex_convolution: convolution
    is bilinear in input and weight, so three real convolutions of the parts (Gauss's
    product) make the complex one: a = conv(x_r, w_r) + b_r, b = conv(x_i, w_i),
    c = conv(x_r + x_i, w_r + w_i) + b_r + b_i, and the result is a - b + i (c - a - b).
    Its gradients follow through the parts' ops.  aten::convolution itself refuses complex
    tensors, as PyTorch's does."""
    args = (stride, padding, dilation, transposed, output_padding, groups)
    if not input.is_complex():
        return torch.convolution(input, weight, bias, *args)
    if weight.dtype != input.dtype:
        raise RuntimeError(f"Input type ({_type_name(input)}) and weight type "
                           f"({_type_name(weight)}) should be the same")
    if bias is not None and bias.dtype != input.dtype:
        return torch.convolution(input, weight, bias, *args)   # its bias-type error
    x, w = input.resolve_conj(), weight.resolve_conj()
    xr, xi, wr, wi = x.real, x.imag, w.real, w.imag
    br = bs = None
    if bias is not None:
        b = bias.resolve_conj()
        br, bs = b.real, b.real + b.imag
    a = torch.convolution(xr, wr, br, *args)
    b = torch.convolution(xi, wi, None, *args)
    c = torch.convolution(xr + xi, wr + wi, bs, *args)
    return torch.complex(a - b, c - a - b)


def _conv(input, weight, bias, stride, padding, dilation, groups, nd, name):
    try:
        _check_conv_dim(input, nd, name)
        if isinstance(padding, str):
            if padding == "valid":
                padding = 0
            elif padding == "same":
                input, padding = _same_padding(input, weight, stride, dilation, nd)
            else:
                raise RuntimeError(f"Invalid padding string: '{padding}'")
        unbatched = input.dim() == nd + 1
        if unbatched:
            input = input.unsqueeze(0)
        out = _convolution(input, weight, bias, _list(stride, nd), _list(padding, nd),
                           _list(dilation, nd), False, [0] * nd, groups)
    except Exception:
        _native_fault(name, input, weight, bias, stride, padding, dilation, groups,
                      defaults=(None, 1, 0, 1, 1))
        raise
    return _drop(out, 0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, name):
    try:
        _check_conv_dim(input, nd, name)
        unbatched = input.dim() == nd + 1
        if unbatched:
            input = input.unsqueeze(0)
        out = _convolution(input, weight, bias, _list(stride, nd), _list(padding, nd),
                           _list(dilation, nd), True, _list(output_padding, nd), groups)
    except Exception:
        _native_fault(name, input, weight, bias, stride, padding, output_padding, groups,
                      dilation, defaults=(None, 1, 0, 0, 1, 1))
        raise
    return _drop(out, 0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                   "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                   "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                   "conv_transpose3d")


# ---- pooling ----------------------------------------------------------------------------

def _one(v, name, what):
    """A 1-D pooling parameter as one int."""
    if isinstance(v, (list, tuple)):
        if len(v) != 1:
            raise RuntimeError(f"{name}() {what} must be an int, list of ints or tuple of ints "
                               f"of size 1 but got size {len(v)}")
        return v[0]
    return v


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    stride = [] if stride is None else stride
    try:
        if input.dim() not in (2, 3):
            raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional "
                               f"0 dim batch size for input, but got:{list(input.shape)}")
        k = _one(kernel_size, "max_pool1d", "kernel_size")
        s = k if stride == [] or stride == () else _one(stride, "max_pool1d", "stride")
        p = _one(padding, "max_pool1d", "padding")
        d = _one(dilation, "max_pool1d", "dilation")
        out, idx = torch.max_pool2d_with_indices(input.unsqueeze(-2), [1, k], [1, s], [0, p],
                                                 [1, d], ceil_mode)
    except Exception:
        _native_fault("max_pool1d_with_indices", input, kernel_size, stride, padding, dilation,
                      ceil_mode, defaults=([], 0, 1, False))
        raise
    return _drop(out, -2), _drop(idx, -2)


def _native_max_pool(op, name, first_is_cuda):
    """max_pool{2,3}d_with_indices over the ATen op: stride None means the kernel size.  The
    3-D one (first_is_cuda) asks whether the input is on CUDA first, as torch's: an
    AttributeError for an input that is no tensor."""
    def max_pool_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                              ceil_mode=False, return_indices=False):
        stride = [] if stride is None else stride
        if first_is_cuda and not isinstance(input, torch.Tensor):
            raise AttributeError(f"'{type(input).__name__}' object has no attribute 'is_cuda'")
        return op(input, kernel_size, stride, padding, dilation, ceil_mode)
    max_pool_with_indices.__name__ = max_pool_with_indices.__qualname__ = name
    return max_pool_with_indices


def _without_indices(with_indices, name):
    """max_pool{1,2,3}d from its _with_indices twin: the indices only when return_indices."""
    def max_pool(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                 return_indices=False):
        if return_indices:
            return with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
        try:
            return with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)[0]
        except Exception:
            _native_fault(name, input, kernel_size, [] if stride is None else stride, padding,
                          dilation, ceil_mode, defaults=([], 0, 1, False))
            raise
    max_pool.__name__ = max_pool.__qualname__ = name
    return max_pool


max_pool2d_with_indices = _native_max_pool(torch.max_pool2d_with_indices,
                                           "max_pool2d_with_indices", False)
max_pool3d_with_indices = _native_max_pool(torch.max_pool3d_with_indices,
                                           "max_pool3d_with_indices", True)
max_pool1d = _without_indices(max_pool1d_with_indices, "max_pool1d")
max_pool2d = _without_indices(max_pool2d_with_indices, "max_pool2d")
max_pool3d = _without_indices(max_pool3d_with_indices, "max_pool3d")


def _check_1d(input, name):
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional "
                           f"tensor for argument #1 'self' (while checking arguments for {name})")


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    stride = [] if stride is None else stride
    try:
        _check_1d(input, "avg_pool1d")
        k = _one(kernel_size, "avg_pool1d", "kernel_size")
        s = k if stride == [] or stride == () else _one(stride, "avg_pool1d", "stride")
        p = _one(padding, "avg_pool1d", "padding")
        out = torch.avg_pool2d(input.unsqueeze(-2), [1, k], [1, s], [0, p], ceil_mode,
                               count_include_pad)
    except Exception:
        _native_fault("avg_pool1d", input, kernel_size, stride, padding, ceil_mode,
                      count_include_pad, defaults=([], 0, False, True))
        raise
    return _drop(out, -2)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    stride = [] if stride is None else stride
    return torch.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                            divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    stride = [] if stride is None else stride
    return torch.avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                            divisor_override)


def _adaptive_size(input, output_size, nd):
    sizes = _list(output_size, nd)
    return [input.shape[input.dim() - nd + i] if s is None else s for i, s in enumerate(sizes)]


def _global_avg(input, nd):
    """Adaptive average pooling to a single bin as PyTorch's adaptive_avg_pool2d/3d take it,
    before any other check: the mean over the last nd dims, kept; a channels-last input
    gives a channels-last output.  So every input of at least nd dims, and every dtype the
    mean takes (complex ones too), pools to one bin.  None where the pooling kernel takes
    the input (floating, nd + 1 or nd + 2 dims, no empty pooled dim) and gives the same
    values: its global path (Note [Global average pooling] in native/pool.c)."""
    if (input.is_floating_point() and input.dim() in (nd + 1, nd + 2)
            and all(input.shape[-1 - i] > 0 for i in range(nd))):
        return None
    out = input.mean(list(range(-1, -nd - 1, -1)), keepdim=True)
    fmt = torch.channels_last if nd == 2 else torch.channels_last_3d
    if input.dim() == nd + 2 and torch._C._suggest_memory_format(input) is fmt:
        c = input.shape[1]
        out = out.as_strided(out.shape, [c, 1] + [c] * nd)
    return out


def adaptive_avg_pool1d(input, output_size):
    try:
        _check_1d(input, "adaptive_avg_pool1d")
        o = _one(output_size, "adaptive_avg_pool1d", "output_size")
        return _drop(adaptive_avg_pool2d(input.unsqueeze(-2), [1, o]), -2)
    except Exception:
        _native_fault("adaptive_avg_pool1d", input, output_size)
        raise


def adaptive_avg_pool2d(input, output_size):
    output_size = _list_with_default(output_size, input.size())
    try:
        size = _adaptive_size(input, output_size, 2)
        out = _global_avg(input, 2) if size == [1, 1] else None
        return _aten._adaptive_avg_pool2d(input, size) if out is None else out
    except Exception:
        _native_fault("adaptive_avg_pool2d", input, output_size)
        raise


def adaptive_avg_pool3d(input, output_size):
    """Adaptive average pooling over the last three dims: the bins are products of one
    interval per dim, so the mean over a bin is the mean over depth of 2-D bin means (two
    passes of the 2-D kernel).  A complex input pools to one bin only, as PyTorch's
    (its 3-D kernel has no complex loop)."""
    output_size = _list_with_default(output_size, input.size())
    try:
        return _adaptive_avg_pool3d(input, output_size)
    except Exception:
        _native_fault("adaptive_avg_pool3d", input, output_size)
        raise


def _adaptive_avg_pool3d(input, output_size):
    if isinstance(output_size, (list, tuple)) and len(output_size) != 3:
        raise RuntimeError("adaptive_avg_pool3d: output_size must be 3")
    out = _global_avg(input, 3) if _adaptive_size(input, output_size, 3) == [1, 1, 1] else None
    if out is not None:
        return out
    if input.dim() not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{list(input.shape)}")
    for d in range(input.dim() - 3, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError("adaptive_avg_pool3d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {list(input.shape)} "
                               f"with dimension {d} being empty")
    if input.is_complex():
        from .._tensor_types import _NAME
        raise NotImplementedError(f'"adaptive_avg_pool3d_cpu" not implemented for '
                                  f"'{_NAME[input.dtype]}'")
    od, oh, ow = _adaptive_size(input, output_size, 3)
    lead, (d, h, w) = list(input.shape[:-3]), input.shape[-3:]
    if od * oh * ow == 0:   # no bins: an empty view of the input
        return input.flatten(-3)[..., :0].reshape(lead + [od, oh, ow])
    planes = _aten._adaptive_avg_pool2d(input.reshape([-1, d, h, w]), [oh, ow])
    depth = _aten._adaptive_avg_pool2d(planes.reshape([-1, 1, d, oh * ow]), [od, oh * ow])
    return depth.reshape(lead + [od, oh, ow])


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    try:
        _check_1d(input, "adaptive_max_pool1d")
        o = _one(output_size, "adaptive_max_pool1d", "output_size")
        out, idx = _aten.adaptive_max_pool2d(input.unsqueeze(-2), [1, o])
    except Exception:
        _native_fault("adaptive_max_pool1d", input, output_size)
        raise
    return _drop(out, -2), _drop(idx, -2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    if return_indices:   # torch's boolean_dispatch asks first
        return adaptive_max_pool1d_with_indices(input, output_size)
    return adaptive_max_pool1d_with_indices(input, output_size)[0]


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    output_size = _list_with_default(output_size, input.size())
    try:
        return _aten.adaptive_max_pool2d(input, _adaptive_size(input, output_size, 2))
    except Exception:
        _native_fault("adaptive_max_pool2d", input, output_size)
        raise


def adaptive_max_pool2d(input, output_size, return_indices=False):
    if return_indices:   # torch's boolean_dispatch asks first
        return adaptive_max_pool2d_with_indices(input, output_size)
    return adaptive_max_pool2d_with_indices(input, output_size)[0]


def _list_with_default(out_size, defaults):
    """output_size with None entries taken from the input's trailing sizes (an int as is),
    as torch's: the first thing its adaptive pools of 2 and 3 dims do."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    defaults = list(defaults)[-len(out_size):]
    return [d if v is None else _index(v) for v, d in zip(out_size, defaults)]


def _index(v):
    """An integer tensor as an int, as PyTorch's parser takes it in a list of ints."""
    if isinstance(v, torch.Tensor) and not (v.is_floating_point() or v.is_complex()):
        return operator.index(v)
    return v


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    output_size = _list_with_default(output_size, input.size())
    try:
        return _aten.adaptive_max_pool3d(input, _list(output_size, 3))
    except Exception:
        _native_fault("adaptive_max_pool3d", input, output_size)
        raise


def adaptive_max_pool3d(input, output_size, return_indices=False):
    if return_indices:   # torch's boolean_dispatch asks first
        return adaptive_max_pool3d_with_indices(input, output_size)
    return adaptive_max_pool3d_with_indices(input, output_size)[0]


def _fractional_max_pool_functions(nd):
    """PyTorch's fractional_max_pool{nd}d_with_indices and fractional_max_pool{nd}d, one body
    for both dims: the output size from output_ratio when it is not given, and one random
    sample per plane and spatial dim, drawn from the default generator when _random_samples
    is None (Note [Fractional pooling windows] in pool_fractional.c).  A scalar output_ratio
    is taken for every dim (PyTorch's 2-D function takes len() of it and fails on a
    number)."""
    name = f"fractional_max_pool{nd}d"
    op = getattr(_aten, name)

    def with_indices(input, kernel_size, output_size=None, output_ratio=None,
                     return_indices=False, _random_samples=None):
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output_size or an "
                             "output_ratio")
        if output_size is None:
            if isinstance(output_ratio, (list, tuple)) and len(output_ratio) > nd and nd == 2:
                raise ValueError("fractional_max_pool2d requires output_ratio to either be a "
                                 "single Int or tuple of Ints.")
            ratio = _list(output_ratio, nd)
            output_size = [int(input.shape[input.dim() - nd + i] * ratio[i])
                           for i in range(nd)]
        samples = _random_samples
        if samples is None:
            n_batch = 1 if input.dim() == nd + 1 else input.shape[0]
            samples = torch.rand(n_batch, input.shape[-nd - 1], nd, dtype=input.dtype,
                                 device=input.device)
        return op(input, _list(kernel_size, nd), _list(output_size, nd), samples)

    def pool(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
             _random_samples=None):
        out, idx = with_indices(input, kernel_size, output_size, output_ratio,
                                _random_samples=_random_samples)
        return (out, idx) if return_indices else out

    with_indices.__name__ = with_indices.__qualname__ = name + "_with_indices"
    pool.__name__ = pool.__qualname__ = name
    return with_indices, pool


fractional_max_pool2d_with_indices, fractional_max_pool2d = _fractional_max_pool_functions(2)
fractional_max_pool3d_with_indices, fractional_max_pool3d = _fractional_max_pool_functions(3)


def conv_tbc(input, weight, bias, pad=0):
    try:
        return _conv_tbc(input, weight, bias, pad)
    except Exception:
        _native_fault("conv_tbc", input, weight, bias, pad, defaults=(0,))
        raise


def _conv_tbc(input, weight, bias, pad):
    """1-D convolution of a (time, batch, in_channels) input with a (kernel_width,
    in_channels, out_channels) weight: output row t is bias + sum over k of padded input row
    t + k times weight[k], for the T + 2 pad - kernel_width + 1 output rows (ATen's
    ConvolutionTBC.cpp, as matrix products)."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output "
                           "channels).")
    if input.dtype != weight.dtype:
        from .._tensor_types import _NAME
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_NAME[input.dtype]} and {_NAME[weight.dtype]}")
    t, b = input.shape[0], input.shape[1]
    kw, cout = weight.shape[0], weight.shape[2]
    rows = t + 2 * pad - kw + 1
    if rows < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {rows}: "
                           f"[{rows}, {b}, {cout}]")
    x = _aten.constant_pad_nd(input, [0, 0, 0, 0, pad, pad]) if pad > 0 else input
    out = bias.to(input.dtype).expand(rows, b, cout).contiguous()   # in the input's dtype
    for k in range(kw):
        # rows k .. k + rows of the padded input (a negative pad crops it first)
        lo = k - min(pad, 0)
        out = out + torch.matmul(x[lo:lo + rows], weight[k])
    return out


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    n = len(kernel_size)
    default = [(input.shape[input.dim() - n + d] - 1) * stride[d] + kernel_size[d]
               - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, "
                         f"but it has a length of '{len(output_size)}'")
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be '
                             f'between {lo} and {hi})')
    return output_size


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    k = _list(kernel_size, 2)
    s = k if stride is None else _list(stride, 2)
    size = _unpool_output_size(input, k, s, _list(padding, 2), output_size)
    return _aten.max_unpool2d(input, indices, size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The 2-D unpooling kernel on the depth * height * width positions as one column."""
    k = _list(kernel_size, 3)
    s = k if stride is None else _list(stride, 3)
    size = _unpool_output_size(input, k, s, _list(padding, 3), output_size)
    volume = size[0] * size[1] * size[2]
    if indices.numel() and int(indices.max()) >= volume:
        raise RuntimeError(f"Found an invalid max index: {int(indices.max())} (output volumes "
                           f"are of size {size[0]}x{size[1]}x{size[2]})")
    lead = list(input.shape[:-3])
    out = _aten.max_unpool2d(input.reshape(lead + [-1, 1]), indices.reshape(lead + [-1, 1]),
                             [volume, 1])
    return out.reshape(lead + size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    k = _list(kernel_size, 1)
    s = k if stride is None else _list(stride, 1)
    size = _unpool_output_size(input, k, s, _list(padding, 1), output_size)
    out = _aten.max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), size + [1])
    return _drop(out, -1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kw, kh = _list(kernel_size, 2)
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (torch.sign(out) * torch.relu(torch.abs(out))).mul(kw * kh).pow(1.0 / norm_type)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kd, kw, kh = _list(kernel_size, 3)
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (torch.sign(out) * torch.relu(torch.abs(out))).mul(kd * kw * kh).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    k = _one(kernel_size, "lp_pool1d", "kernel_size")
    return (torch.sign(out) * torch.relu(torch.abs(out))).mul(k).pow(1.0 / norm_type)


# ---- padding ----------------------------------------------------------------------------

_PAD_OPS = {
    ("reflect", 1): "reflection_pad1d", ("reflect", 2): "reflection_pad2d",
    ("reflect", 3): "reflection_pad3d", ("replicate", 1): "replication_pad1d",
    ("replicate", 2): "replication_pad2d", ("replicate", 3): "replication_pad3d",
}


def pad(input, pad, mode="constant", value=None):
    if not isinstance(pad, (list, tuple)):   # the input first, as torch's parser
        _native_fault("pad", input, [])
        check_arg("pad", "pad", "tuple of ints", pad, 2)
    try:
        return _pad(input, list(pad), mode, value)
    except Exception:
        _native_fault("pad", input, pad, mode, value, defaults=("constant", None))
        raise


def _pad(input, pad, mode, value):
    if isinstance(value, complex):   # PyTorch's parser: value is a float there
        raise TypeError("pad(): argument 'value' (position 4) must be float, not complex")
    # PyTorch's order of checks: the mode, the pad's length, then the mode's own
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.dim()}")
    if mode == "constant":
        return torch.constant_pad_nd(input, pad, 0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    n = len(pad) // 2
    if n > 3 or input.dim() not in (n + 1, n + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for "
                                  f"{input.dim()}D input tensor.")
    if mode == "circular":
        return _aten._pad_circular(input, pad)
    return getattr(_aten, _PAD_OPS[(mode, n)])(input, pad)


# ---- interpolation ----------------------------------------------------------------------

_INTERP_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if mode in ("nearest", "area"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {spatial} and output size of {size}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output "
                    "size in (o1, o2, ...,oK) format.")
            output_size = list(size)
        else:
            output_size = [size] * dim
        scales = [None] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {spatial} and scale_factor of shape "
                    f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                    "format and scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        output_size = [int(math.floor(float(spatial[i]) * scales[i])) for i in range(dim)]
        if recompute_scale_factor:
            scales = [None] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area":
        if dim == 1:
            return adaptive_avg_pool1d(input, output_size)
        if dim == 2:
            return adaptive_avg_pool2d(input, output_size)
    table = {
        (3, "nearest"): ("upsample_nearest1d", False),
        (4, "nearest"): ("upsample_nearest2d", False),
        (5, "nearest"): ("upsample_nearest3d", False),
        (3, "linear"): ("upsample_linear1d", True),
        (4, "bilinear"): ("upsample_bilinear2d", True),
        (5, "trilinear"): ("upsample_trilinear3d", True),
        (4, "bicubic"): ("upsample_bicubic2d", True),
    }
    entry = table.get((input.dim(), mode))
    if entry is None:
        needs = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
        if mode in needs:
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                      f"{needs[mode]}D input")
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            "the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    op = getattr(_aten, entry[0])
    if entry[1]:
        return op(input, output_size, align_corners, *scales)
    return op(input, output_size, *scales)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- pixel shuffle, fold ----------------------------------------------------------------

def _like_channels_last(input, out):
    """out, channels-last when input is a channels-last 4-d tensor (PyTorch's pixel_shuffle
    and pixel_unshuffle keep the format)"""
    if input.dim() == 4 and input.is_contiguous(memory_format=torch.channels_last) and \
            not input.is_contiguous():
        return out.contiguous(memory_format=torch.channels_last)
    return out


def _check_pixel_shuffle(input, r, name, factor_name):
    if input.dim() < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got "
                           f"input with {input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"{name} expects a positive {factor_name}, but got {r}")


def pixel_shuffle(input, upscale_factor):
    try:
        return _pixel_shuffle(input, upscale_factor)
    except Exception:
        _native_fault("pixel_shuffle", input, upscale_factor)
        raise


def _pixel_shuffle(input, r):
    _check_pixel_shuffle(input, r, "pixel_shuffle", "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r) != 0:
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be "
                           "divisible by the square of upscale_factor, but input.size(-3)="
                           f"{c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(lead + [c // (r * r), r, r, h, w])
    x = x.permute(list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2])
    return _like_channels_last(input, x.reshape(lead + [c // (r * r), h * r, w * r]))


def pixel_unshuffle(input, downscale_factor):
    try:
        return _pixel_unshuffle(input, downscale_factor)
    except Exception:
        _native_fault("pixel_unshuffle", input, downscale_factor)
        raise


def _pixel_unshuffle(input, r):
    _check_pixel_shuffle(input, r, "pixel_unshuffle", "downscale_factor")
    *lead, c, h, w = input.shape
    if h % r != 0:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {r}")
    if w % r != 0:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    n = len(lead)
    x = input.reshape(lead + [c, h // r, r, w // r, r])
    x = x.permute(list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3])
    return _like_channels_last(input, x.reshape(lead + [c * r * r, h // r, w // r]))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    return _aten.im2col(input, _list(kernel_size, 2), _list(dilation, 2), _list(padding, 2),
                        _list(stride, 2))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    return _aten.col2im(input, _list(output_size, 2), _list(kernel_size, 2),
                        _list(dilation, 2), _list(padding, 2), _list(stride, 2))


# ---- grid sampling ----------------------------------------------------------------------

def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    modes = {"bilinear": 0, "nearest": 1, "bicubic": 2}
    paddings = {"zeros": 0, "border": 1, "reflection": 2}
    if mode not in modes:
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in paddings:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if not (isinstance(input, torch.Tensor) and isinstance(grid, torch.Tensor)):
        _native_fault("grid_sampler", input, grid, modes[mode], paddings[padding_mode],
                      bool(align_corners))
    sampler = _aten.grid_sampler_2d if input.dim() == 4 else _aten.grid_sampler_3d
    return sampler(input, grid, modes[mode], paddings[padding_mode], bool(align_corners))


def affine_grid(theta, size, align_corners=None):
    if align_corners is None:
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or list(theta.shape[-2:]) != [2, 3]:
            raise ValueError("Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{tuple(size)}. Got {theta.shape}.")
    elif len(size) == 5:
        if theta.dim() != 3 or list(theta.shape[-2:]) != [3, 4]:
            raise ValueError("Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{tuple(size)}. Got {theta.shape}.")
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {tuple(size)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {tuple(size)}")
    return _aten.affine_grid_generator(theta, size, align_corners)

# each public function goes to __torch_function__ first (Note [Torch function]), but the
# upsample ones: PyTorch's are not routed, the interpolate they call is
_overrides._route_functions(globals(), skip=("upsample", "upsample_bilinear", "upsample_nearest"))


def _boolean_dispatch(name):
    """F.<name> as PyTorch's boolean_dispatch makes it: a true return_indices (by keyword or
    at its place) calls F.<name>_with_indices, which __torch_function__ then sees; otherwise
    the pool without indices, seen as F.<name> itself."""
    routed = globals()[name]
    with_indices = globals()[name + "_with_indices"]
    pool = routed.__wrapped__
    at = list(inspect.signature(pool).parameters).index("return_indices")

    def dispatch(*args, **kwargs):
        flag = kwargs["return_indices"] if "return_indices" in kwargs else \
            len(args) > at and args[at]
        return (with_indices if flag else without)(*args, **kwargs)
    functools.update_wrapper(dispatch, pool)
    without = _C._RoutedFunction(pool, dispatch)
    globals()[name] = dispatch


for _name in ("max_pool1d", "max_pool2d", "max_pool3d", "adaptive_max_pool1d",
              "adaptive_max_pool2d", "adaptive_max_pool3d", "fractional_max_pool2d",
              "fractional_max_pool3d"):
    _boolean_dispatch(_name)
