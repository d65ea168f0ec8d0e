"""pytorchlite.nn.functional -- the functional nn API.  Mirrors torch/nn/functional.py.

Softmax, the pointwise activations, nll_loss, binary_cross_entropy and embedding run C
kernels with their own derivative formulas (src/aten/native/{activation,nn}.c,
src/autograd/derivatives/{activation,nn}.c).  The rest is written here in terms of those and of
other differentiable ops, as PyTorch's CompositeImplicitAutograd functions are.
ctc_loss is one of them: the CTC alpha recursion in log space, one vectorized step (a
logsumexp over stay / step / skip transitions) per time step, differentiated by autograd.

Randomness: dropout masks and rrelu slopes are drawn from the default generator
(bernoulli_ / uniform_, Philox), so pytorchlite.manual_seed makes them reproducible."""
import functools
import math
import operator
import sys as _sys
import types as _types
import warnings

import pytorchlite as torch
from pytorchlite import _C
from pytorchlite import _ops_namespace, overrides as _overrides
from pytorchlite._arg_check import check_arg
from pytorchlite._tensor_types import _NAME
from pytorchlite._functions import _check_result_cast
from pytorchlite._pointwise import _not_implemented
from pytorchlite._native_signature import native, native_fault as _native_fault

aten = _ops_namespace.aten_bindings

__all__ = [
    "softmax", "softmin", "log_softmax", "gelu", "silu", "mish", "relu", "relu_", "relu6",
    "elu", "elu_", "selu", "selu_", "celu", "celu_", "leaky_relu", "leaky_relu_",
    "hardtanh", "hardtanh_", "softplus", "softsign", "hardswish", "hardsigmoid",
    "logsigmoid", "tanhshrink", "softshrink", "hardshrink", "threshold", "threshold_",
    "prelu", "rrelu", "rrelu_", "glu", "tanh", "sigmoid", "linear", "bilinear",
    "nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
    "soft_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
    "multilabel_margin_loss", "triplet_margin_loss", "batch_norm", "layer_norm",
    "group_norm", "instance_norm", "rms_norm", "local_response_norm", "normalize",
    "embedding", "embedding_bag", "dropout", "dropout1d", "dropout2d", "dropout3d",
    "alpha_dropout", "feature_alpha_dropout", "scaled_dot_product_attention",
    "cosine_similarity", "pairwise_distance", "poisson_nll_loss", "gaussian_nll_loss",
    "triplet_margin_with_distance_loss", "ctc_loss", "pdist", "channel_shuffle",
    "native_channel_shuffle", "gumbel_softmax", "linear_cross_entropy",
]

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction_enum(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


def _legacy_reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduce(loss, reduction):
    r = _reduction_enum(reduction)
    return loss if r == 0 else loss.mean() if r == 1 else loss.sum()


def _weighted_loss(loss, weight, input, reduction, mean_over_weight):
    """PyTorch's weighted regression losses: loss * weight, reduced; 'mean' divides by
    sum(weight) for mse and l1 (mean_over_weight) and by the element count for huber."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight.sum() if mean_over_weight else loss.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                     f"'sum'.")


def _mask(cond, like):
    """A 0/1 tensor of like's dtype from a bool tensor (a constant for autograd)."""
    return cond.to(like.dtype)


# ---- softmax family ----

def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    # torch's Python: the method, so that what is no tensor raises an AttributeError
    if dim is None:
        dim = _softmax_dim(input.dim())
    return input.softmax(dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return (-input).softmax(dim, dtype=dtype)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with g drawn from Gumbel(0, 1) (-log of an Exp(1) draw);
    hard=True: the one-hot of its argmax in the forward pass, with the soft sample's
    gradient (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -torch.empty_like(logits).exponential_().log()
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = torch.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return input.log_softmax(dim, dtype=dtype)


# ---- activations ----

def _inplace(fn_, fn, input, inplace, *args):
    return fn_(input, *args) if inplace else fn(input, *args)


def relu(input, inplace=False):
    # the methods: torch.relu takes a number (a pointwise op's binding does), torch's refuses it
    try:
        return input.relu_() if inplace else input.relu()
    except AttributeError:
        _native_fault("relu_" if inplace else "relu", input)
        raise


def relu_(input):
    try:
        return input.relu_()
    except AttributeError:
        _native_fault("relu_", input)
        raise


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def gelu(input, approximate="none"):
    return aten.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return _inplace(aten.silu_, aten.silu, input, inplace)


def mish(input, inplace=False):
    return _inplace(aten.mish_, aten.mish, input, inplace)


def elu(input, alpha=1.0, inplace=False):
    return _inplace(aten.elu_, aten.elu, input, inplace, alpha)


def elu_(input, alpha=1.0, scale=1.0, input_scale=1.0):
    # torch's is the native elu_, with its scales
    return aten.elu_(input, alpha, scale, input_scale)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    try:
        return _inplace(aten.elu_, aten.elu, input, inplace, _SELU_ALPHA, _SELU_SCALE)
    except Exception:
        _native_fault("selu_" if inplace else "selu", input)
        raise


def selu_(input):
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    return _inplace(aten.celu_, aten.celu, input, inplace, alpha)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _inplace(aten.leaky_relu_, aten.leaky_relu, input, inplace, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return aten.leaky_relu_(input, negative_slope)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _inplace(aten.hardtanh_, aten.hardtanh, input, inplace, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    # torch's is the native op, without hardtanh's check of min_val against max_val
    return aten.hardtanh_(input, min_val, max_val)


def relu6(input, inplace=False):
    try:
        return hardtanh(input, 0.0, 6.0, inplace)
    except Exception:
        _native_fault("relu6_" if inplace else "relu6", input)
        raise


def softplus(input, beta=1.0, threshold=20.0):
    return aten.softplus(input, beta, threshold)


def softsign(input):
    return input / (input.abs() + 1)


def hardswish(input, inplace=False):
    return _inplace(aten.hardswish_, aten.hardswish, input, inplace)


def hardsigmoid(input, inplace=False):
    return _inplace(aten.hardsigmoid_, aten.hardsigmoid, input, inplace)


def logsigmoid(input):
    return aten.log_sigmoid(input)


def tanhshrink(input):
    return input - input.tanh()


def softshrink(input, lambd=0.5):
    return aten.softshrink(input, lambd)


def hardshrink(input, lambd=0.5):
    return aten.hardshrink(input, lambd)


def _threshold(input, threshold, value, inplace=False):
    return _inplace(aten.threshold_, aten.threshold, input, inplace, threshold, value)


threshold = _threshold   # named _threshold, as PyTorch's (what a trace prints)


def threshold_(input, threshold, value):
    return aten.threshold_(input, threshold, value)


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight broadcast along the channel dim (dim 1)."""
    if not (isinstance(input, torch.Tensor) and isinstance(weight, torch.Tensor)):
        _native_fault("prelu", input, weight)
    if input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {_NAME[input.dtype]} and "
                           f"{_NAME[weight.dtype]}")
    if weight.numel() != 1:
        channels = input.size(1) if input.dim() >= 2 else 1
        if input.dim() == 0 or weight.numel() != channels:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers "
                f"= {weight.numel()} and channel size = {channels}.")
        if input.dim() >= 2:
            weight = weight.reshape([channels] + [1] * (input.dim() - 2))
    return torch.relu(input) - weight * torch.relu(-input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU whose negative slope is drawn uniformly from [lower, upper] per element
    while training (the slopes are constants for autograd), (lower + upper) / 2 otherwise."""
    return _rrelu(input, lower, upper, training, inplace, None)


def _rrelu(input, lower, upper, training, inplace, generator):
    """rrelu drawing the slopes from `generator` (None: the default one), as torch.rrelu."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slope = torch.empty(input.shape, dtype=input.dtype).uniform_(lower, upper,
                                                                 generator=generator)
    scale = torch.where(input >= 0, torch.ones((), dtype=input.dtype), slope)
    return input.mul_(scale) if inplace else input * scale


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    if not (isinstance(input, torch.Tensor) and isinstance(lower, (int, float)) and
            isinstance(upper, (int, float)) and isinstance(training, bool)):
        _native_fault("rrelu_", input, lower, upper, training)
    if not lower <= upper:   # torch's check, as its native rrelu_ makes it (NaN fails it)
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    return rrelu(input, lower, upper, training, inplace=True)


def glu(input, dim=-1):
    # torch's Python refuses a 0-dim input, then its native glu's parser the rest
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if not isinstance(dim, int) or not isinstance(input, torch.Tensor):
        _native_fault("glu", input, dim)
    if input.is_complex():   # PyTorch's kernel has no complex loop
        raise _not_implemented("glu_cpu", input.dtype)
    d = dim + input.dim() if dim < 0 else dim
    n = input.size(d)
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    lead = (slice(None),) * d
    return input[lead + (slice(0, n // 2),)] * torch.sigmoid(input[lead + (slice(n // 2, n),)])


# ---- linear ----

def linear(input, weight, bias=None):
    """input @ weight.T + bias.  As torch does, a 2-D weight multiplies a contiguous input of
    any rank as one [N, in] matrix viewed back to [*, out]: the weight's gradient is then one
    mm instead of a batched product summed over the batch; with a bias it is one addmm
    (AddmmBackward0, as torch's)."""
    try:
        if weight.dim() == 2 and input.dim() >= 2 and (input.dim() == 2 or input.is_contiguous()) \
                and (bias is None or bias.dim() <= 1):
            x = input if input.dim() == 2 else input.reshape(-1, input.size(-1))
            out = torch.mm(x, weight.t()) if bias is None else torch.addmm(bias, x, weight.t())
            return out if input.dim() == 2 else out.view(list(input.shape[:-1]) + [out.size(-1)])
        out = torch.matmul(input, weight.t())
        return out if bias is None else out + bias
    except Exception:
        _native_fault("linear", input, weight, bias, defaults=(None,))
        raise


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = x1 W[o] x2 + b[o].  [*, i1], [*, i2], [o, i1, i2] -> [*, o]"""
    try:
        return _bilinear(input1, input2, weight, bias)
    except Exception:
        _native_fault("bilinear", input1, input2, weight, bias, defaults=(None,))
        raise


def _bilinear(input1, input2, weight, bias):
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} "
                           f"and {input2.dim()}")
    for d in range(input1.dim() - 1):
        if input1.size(d) != input2.size(d):
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got "
                               f"{input1.size(d)} and {input2.size(d)}")
    out_f, in1, in2 = weight.shape
    if input1.size(-1) != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.size(-1)} but expected {in1}")
    if input2.size(-1) != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.size(-1)} but expected {in2}")
    if bias is not None and bias.size(0) != out_f:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.size(0)} but expected {out_f}")
    w = weight.permute(1, 0, 2).reshape(in1, out_f * in2)
    t = torch.matmul(input1, w).reshape(list(input1.shape[:-1]) + [out_f, in2])
    y = (t * input2.unsqueeze(-2)).sum(-1)
    return y if bias is None else y + bias


# ---- losses ----

_LOWER_FLOATS = (torch.float16, torch.bfloat16)


def _float32(arg):
    return arg.float() if isinstance(arg, torch.Tensor) and arg.dtype in _LOWER_FLOATS \
        and arg.device.type == "cpu" else arg


def _autocast_to_float32(loss):
    """A loss of PyTorch's CPU autocast float32 list that is written here in Python rather
    than as one operator: inside torch.autocast("cpu"), its float16/bfloat16 tensor
    arguments are cast to float32 and its body runs with autocast off, as the AutocastCPU
    fallback does for a listed operator (Note [Autocast] in src/aten/autocast.h), so it
    computes in and returns float32 like PyTorch's.  Outside autocast it costs one check."""
    @functools.wraps(loss)
    def in_float32_under_autocast(*args, **kwargs):
        if not _C._autocast_state("cpu")[0]:
            return loss(*args, **kwargs)
        args = [_float32(a) for a in args]
        kwargs = {k: _float32(v) for k, v in kwargs.items()}
        with torch.autocast("cpu", enabled=False):
            return loss(*args, **kwargs)
    return in_float32_under_autocast


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return aten.nll_loss_nd(input, target, weight, _reduction_enum(reduction), ignore_index)


def _class_view(t, input, class_dim):
    """A per-class tensor [C] shaped to broadcast along input's class dim."""
    return t.reshape([-1] + [1] * (input.dim() - class_dim - 1))


@_autocast_to_float32
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction)
    try:
        if not 0.0 <= label_smoothing <= 1.0:
            raise RuntimeError(
                f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        class_dim = 0 if input.dim() == 1 else 1
        n_classes = input.size(class_dim)
        lsm = log_softmax(input, class_dim)
        if target.is_floating_point():
            # class probabilities: target has input's shape
            if tuple(target.shape) != tuple(input.shape):
                raise RuntimeError(
                    f"Expected target size {list(input.shape)}, got {list(target.shape)}")
            if label_smoothing > 0:
                target = target * (1 - label_smoothing) + label_smoothing / n_classes
            prod = lsm * target
            if weight is not None:
                prod = prod * _class_view(weight, input, class_dim)
            loss = -prod.sum(class_dim)
            if red == 0:
                return loss
            if red == 2:
                return loss.sum()
            return loss.sum() / (input.numel() / n_classes)
        nll = aten.nll_loss_nd(lsm, target, weight, red, ignore_index)
        if label_smoothing == 0:
            return nll
        keep = _mask(target != ignore_index, lsm)
        smooth = lsm if weight is None else lsm * _class_view(weight, input, class_dim)
        smooth = -smooth.sum(class_dim) * keep
        if red == 0:
            pass
        elif red == 2:
            smooth = smooth.sum()
        elif weight is None:
            smooth = smooth.sum() / keep.sum()
        else:
            # normalized by the weights of the counted targets, like nll_loss
            total = aten.nll_loss_nd(-torch.ones_like(lsm), target, weight, 2, ignore_index)
            smooth = smooth.sum() / total
        return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)
    except Exception:
        _native_fault("cross_entropy_loss", input, target, weight, red, ignore_index,
                      label_smoothing)
        raise


def _check_same_size_warning(input, target, name):
    if tuple(input.shape) != tuple(target.shape):
        import warnings
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.", stacklevel=3)


def _broadcast_pair(input, target):
    """input and target broadcast to one shape, as PyTorch's regression losses do (after the
    target-size warning)."""
    if tuple(input.shape) == tuple(target.shape):
        return input, target
    return torch.broadcast_tensors(input, target)


def _regression_loss(op, input, target, reduction, *param):
    """aten.<op> (mse_loss, smooth_l1_loss, huber_loss) on CPU tensors; elsewhere (CUDA, meta:
    the op has no kernel there yet) the same loss written with elementwise ops."""
    if input.device.type == "cpu" and target.device.type == "cpu":
        return getattr(aten, op)(*_broadcast_pair(input, target), _reduction_enum(reduction),
                                 *param)
    d = input - target
    z = d.abs()
    if op == "mse_loss":
        loss = d * d
    elif op == "smooth_l1_loss":
        loss = torch.where(z < param[0], 0.5 * z * z / param[0], z - 0.5 * param[0])
    else:
        loss = torch.where(z < param[0], 0.5 * z * z, param[0] * (z - 0.5 * param[0]))
    return _reduce(loss, reduction)


@_autocast_to_float32
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_same_size_warning(input, target, "mse_loss")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is None:
        return _regression_loss("mse_loss", input, target, reduction)
    d = input - target
    return _weighted_loss(d * d, weight, input, reduction, True)


@_autocast_to_float32
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_same_size_warning(input, target, "l1_loss")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = (input - target).abs()
    if weight is not None:
        return _weighted_loss(loss, weight, input, reduction, True)
    return _reduce(loss, reduction)


@_autocast_to_float32
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _check_same_size_warning(input, target, "smooth_l1_loss")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:   # PyTorch's F.smooth_l1_loss runs l1_loss then
        return _reduce((input - target).abs(), reduction)
    return _regression_loss("smooth_l1_loss", input, target, reduction, beta)


@_autocast_to_float32
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _check_same_size_warning(input, target, "huber_loss")
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is None:
        return _regression_loss("huber_loss", input, target, reduction, delta)
    return _weighted_loss(_regression_loss("huber_loss", input, target, "none", delta), weight,
                          input, reduction, False)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size.")
    return aten.binary_cross_entropy(input, target, weight, _reduction_enum(reduction))


@_autocast_to_float32
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """(1 - t) x - (1 + (pos_weight - 1) t) log(sigmoid(x)): stable for large |x|."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction)
    if tuple(target.size()) != tuple(input.size()):
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    if not all(t is None or isinstance(t, torch.Tensor) for t in (input, weight, pos_weight)):
        _native_fault("binary_cross_entropy_with_logits", input, target, weight, pos_weight, red)
    return _bce_with_logits(input, target, weight, pos_weight, red)


def _bce_with_logits(input, target, weight, pos_weight, red):
    """The loss of binary_cross_entropy_with_logits after F's checks (torch's native form,
    torch.binary_cross_entropy_with_logits, broadcasts input and target instead)."""
    if not (target.is_floating_point() or target.dtype == torch.bool):
        # torch's kernel writes (1 - target) * input into a tensor of target's dtype
        _check_result_cast(torch.result_type(input, target), target.dtype)
    ls = aten.log_sigmoid(input)
    if pos_weight is not None:
        loss = (1 - target) * input - ((pos_weight - 1) * target + 1) * ls
    else:
        loss = (1 - target) * input - ls
    if weight is not None:
        loss = loss * weight
    return loss if red == 0 else loss.mean() if red == 1 else loss.sum()


@_autocast_to_float32
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    red = 2 if reduction == "batchmean" else _reduction_enum(reduction)
    if not (isinstance(input, torch.Tensor) and isinstance(target, torch.Tensor)
            and isinstance(log_target, bool)):
        _native_fault("kl_div", input, target, red, log_target=log_target)
    if not (input.is_floating_point() or input.is_complex()) or \
            not (target.is_floating_point() or target.is_complex()):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy(t, t) - t * x, with 0 log 0 = 0
        safe = target + _mask(target == 0, target)
        loss = target * safe.log() - target * input
    if reduction == "batchmean":
        return loss.sum() / input.size(0) if input.dim() != 0 else loss.sum()
    return _reduce(loss, reduction)


@_autocast_to_float32
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return _reduce(torch.relu(-target * (input1 - input2) + margin), reduction)


@_autocast_to_float32
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction)
    if not (isinstance(input, torch.Tensor) and isinstance(target, torch.Tensor)):
        _native_fault("hinge_embedding_loss", input, target, margin, red)
    from_margin = _mask(target != 1, input) * torch.relu(margin - input)
    from_self = _mask(target != -1, input) * input
    return _reduce(from_margin + from_self, reduction)


@_autocast_to_float32
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction)
    if not all(isinstance(t, torch.Tensor) for t in (input1, input2, target)):
        _native_fault("cosine_embedding_loss", input1, input2, target, margin, red)
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag1 = (input1 * input1).sum(-1) + eps
    mag2 = (input2 * input2).sum(-1) + eps
    cos = prod / (mag1 * mag2).sqrt()
    pos = _mask(target == 1, cos) * (1 - cos)
    neg = _mask(target == -1, cos) * torch.relu(cos - margin)
    return _reduce(pos + neg, reduction)


@_autocast_to_float32
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction)
    if not (isinstance(input, torch.Tensor) and isinstance(target, torch.Tensor)):
        _native_fault("soft_margin_loss", input, target, red)
    # log(1 + e^(-y x)) with no linear cut-off (softplus's threshold), as PyTorch computes it;
    # softplus has no complex form, so a complex -y x takes exp and log1p.  PyTorch writes
    # the loss in the input's dtype (its out= form).
    z = -target * input
    loss = z.exp().log1p() if z.is_complex() else aten.softplus(z, 1.0, math.inf)
    if loss.dtype != input.dtype and (input.is_floating_point() or input.is_complex()):
        _check_result_cast(loss.dtype, input.dtype)
        loss = loss.to(input.dtype)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.dim() - 1) / input.size(-1)
    return _reduce(loss, reduction)


def _one_hot(target, n, like):
    """[*] int64 -> [*, n] 0/1 of like's dtype."""
    return _mask(target.unsqueeze(-1) == torch.arange(n), like)


@_autocast_to_float32
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """sum over i != y of max(0, margin - x[y] + x[i])^p / C (weighted by weight[y])."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    if not (isinstance(input, torch.Tensor) and isinstance(target, torch.Tensor)):
        _native_fault("multi_margin_loss", input, target, p, margin, weight, red)
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(-1)
    n_classes = x.size(1)
    if bool((t < 0).any()) or bool((t >= n_classes).any()):
        raise RuntimeError("target out of range")
    hot = _one_hot(t, n_classes, x)
    xy = (x * hot).sum(1, keepdim=True)
    z = torch.relu(margin - xy + x) * (1 - hot)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * (hot * weight).sum(1, keepdim=True)
    loss = z.sum(1) / n_classes
    if input.dim() < 2:
        loss = loss.reshape(target.shape)
    return _reduce(loss, reduction)


@_autocast_to_float32
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """For each sample: sum over targets j (up to the first -1) and non-targets k of
    max(0, 1 - (x[j] - x[k])) / C."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction)
    if not (isinstance(input, torch.Tensor) and isinstance(target, torch.Tensor)):
        _native_fault("multilabel_margin_loss", input, target, red)
    x = input if input.dim() == 2 else input.reshape(1, -1)
    n_classes = x.size(1)
    rows = target.reshape(x.size(0), n_classes).tolist()
    is_target = []
    for row in rows:
        mark = [0.0] * n_classes
        for j in row:
            if j < 0:
                break
            if j >= n_classes:
                raise RuntimeError(f"target index {j} is out of bounds")
            mark[j] = 1.0
        is_target.append(mark)
    tgt = torch.tensor(is_target, dtype=x.dtype)
    pair = tgt.unsqueeze(2) * (1 - tgt).unsqueeze(1)
    diff = torch.relu(1 - x.unsqueeze(2) + x.unsqueeze(1))
    loss = (diff * pair).sum(2).sum(1) / n_classes
    if input.dim() < 2:
        loss = loss.reshape([])
    return _reduce(loss, reduction)


@_autocast_to_float32
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    # PyTorch's Python wrapper checks the margin, then passes every argument by position to
    # the native triplet_margin_loss, whose parser names them
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    for k, (name, kind, v) in enumerate((("anchor", "Tensor", anchor),
                                         ("positive", "Tensor", positive),
                                         ("negative", "Tensor", negative),
                                         ("margin", "float", margin), ("p", "float", p),
                                         ("eps", "float", eps), ("swap", "bool", swap))):
        check_arg("triplet_margin_loss", name, kind, v, k + 1)
    dims = {anchor.dim(), positive.dim(), negative.dim()}
    if len(dims) != 1:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and "
            f"negative {negative.dim()}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_swap = pairwise_distance(positive, negative, p, eps)
        closer = _mask(d_swap < d_neg, d_neg)
        d_neg = closer * d_swap + (1 - closer) * d_neg
    return _reduce(torch.relu(margin + d_pos - d_neg), reduction)


# ---- normalization ----

def _normalize_rows(x, eps):
    """x [A, B, N] normalized over its last dim, (x - mean) / sqrt(var + eps): the layer norm
    kernel's first output."""
    return aten.native_layer_norm(x, [x.size(2)], None, None, eps)[0]


def _normalize_with(input, mean, var, eps):
    """(input - mean) / sqrt(var + eps) with per-channel statistics [C] (dim 1)."""
    shape = [1, input.size(1)] + [1] * (input.dim() - 2)
    return (input - mean.reshape(shape)) / (var.reshape(shape) + eps).sqrt()


def _scale_shift_channels(out, weight, bias):
    """out * weight + bias with per-channel weight and bias [C] (dim 1), either may be None."""
    shape = [1, out.size(1)] + [1] * (out.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """aten.native_batch_norm (src/aten/native/batch_norm.c: one pass for the statistics, one
    for the output; training updates the running statistics in place)."""
    if training:
        _verify_batch_size(input.size())
    args = (input, weight, bias, running_mean, running_var, training, momentum, eps, True)
    if not all(a is None or isinstance(a, torch.Tensor) for a in args[1:5]):
        _native_fault("batch_norm", *args)
    try:
        return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)
    except Exception:
        _native_fault("batch_norm", *args)
        raise


def _verify_batch_size(size):
    """torch's check of a batch norm's input size in training: more than one value per
    channel (size[0] times the sizes after the channel dim)."""
    values = size[0]
    for s in size[2:]:
        values *= s
    if values == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{size}")


def _verify_spatial_size(size):
    """torch's check of an instance norm's input size: more than one spatial element."""
    if math.prod(size[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{size}")


def _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps):
    if input.dim() < 2:
        raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")
    if input.numel() == 0:
        # as PyTorch's batch_norm: a copy (scaled and shifted so that gradients reach weight
        # and bias), no statistics
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    return aten.native_batch_norm(input, weight, bias, running_mean, running_var, training,
                                  0.1 if momentum is None else momentum, eps)[0]


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    # torch's native layer_norm takes a list of ints as normalized_shape (not an int)
    if not isinstance(normalized_shape, (list, tuple)):
        _native_fault("layer_norm", input, [])
        check_arg("layer_norm", "normalized_shape", "tuple of ints", normalized_shape, 2)
    try:
        return aten.native_layer_norm(input, list(normalized_shape), weight, bias, eps)[0]
    except Exception:
        _native_fault("layer_norm", input, normalized_shape, weight, bias, eps, True)
        raise


def rms_norm(input, normalized_shape, weight=None, eps=None):
    if not isinstance(normalized_shape, (list, tuple)):
        _native_fault("rms_norm", input, [])
        check_arg("rms_norm", "normalized_shape", "tuple of ints", normalized_shape, 2)
    if not (isinstance(input, torch.Tensor)
            and (weight is None or isinstance(weight, torch.Tensor))):
        _native_fault("rms_norm", input, normalized_shape, weight, eps)
    try:
        return _rms_norm(input, list(normalized_shape), weight, eps)
    except Exception:
        _native_fault("rms_norm", input, normalized_shape, weight, eps)
        raise


def _rms_norm(input, normalized_shape, weight, eps):
    k = len(normalized_shape)
    if input.dim() < k or list(input.shape[input.dim() - k:]) != normalized_shape:
        raise RuntimeError(
            f"Given normalized_shape={normalized_shape}, expected input with shape "
            f"[*, {', '.join(str(s) for s in normalized_shape)}], but got input of size"
            f"{list(input.shape)}")
    if eps is None:
        eps = {torch.float64: 2.220446049250313e-16, torch.float16: 0.0009765625,
               torch.bfloat16: 0.0078125}.get(input.dtype, 1.1920928955078125e-07)
    dims = list(range(input.dim() - k, input.dim()))
    out = input / ((input * input).mean(dims, keepdim=True) + eps).sqrt()
    return out if weight is None else out * weight


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    _verify_batch_size([input.size(0) * input.size(1) // num_groups, num_groups]
                       + list(input.size()[2:]))
    try:
        return _group_norm(input, num_groups, weight, bias, eps)
    except Exception:
        _native_fault("group_norm", input, num_groups, weight, bias, eps, True)
        raise


def _group_norm(input, num_groups, weight, bias, eps):
    n, c = input.size(0), input.size(1)
    if c % num_groups != 0:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(input.shape)} and num_groups={num_groups}")
    if input.device.type not in ("cpu", "meta"):
        return _group_norm_composite(input, num_groups, weight, bias, eps)
    hw = math.prod(input.shape[2:])
    return aten.native_group_norm(input, weight, bias, n, c, hw, num_groups, eps)[0]


def _group_norm_composite(input, num_groups, weight, bias, eps):
    """group_norm as layer norm rows [N, G, -1] and the affine: the devices without
    native_group_norm (docs/decisions.md, the fused kernels)."""
    n = input.size(0)
    out = _normalize_rows(input.reshape(n, num_groups, -1), eps).reshape(input.shape)
    return _scale_shift_channels(out, weight, bias)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    if use_input_stats:
        _verify_spatial_size(input.size())
    args = (input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
            True)
    if not all(a is None or isinstance(a, torch.Tensor) for a in args[1:5]):
        _native_fault("instance_norm", *args)
    try:
        return _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)
    except Exception:
        _native_fault("instance_norm", *args)
        raise


def _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum,
                   eps):
    if input.dim() < 3:
        raise ValueError(f"expected 3D or 4D input (got {input.dim()}D input)")
    if use_input_stats:
        rows = input.flatten(2)
        out = _normalize_rows(rows, eps).reshape(input.shape)
        count = rows.size(2)
        with torch.no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(rows.mean([2, 0]) * momentum)
            if running_var is not None and count > 1:
                unbiased = rows.var(2, correction=1).mean([0])
                running_var.mul_(1 - momentum).add_(unbiased * momentum)
    else:
        out = _normalize_with(input, running_mean, running_var, eps)
    return _scale_shift_channels(out, weight, bias)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha/size * sum of x^2 over the channel window [c - size//2, c + (size-1)//2])^beta"""
    if input.dim() < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    # torch's pads the squares with these, then pools them with a window of `size`
    pads = [0, 0] * (input.dim() - 2 if input.dim() < 4 else 2) + [size // 2, (size - 1) // 2]
    if not all(isinstance(p, int) for p in pads):
        _native_fault("pad", input, pads)
    if size <= 0:
        window = f"kH: {size} kW: 1" if input.dim() == 3 else f"kT: {size} kH: 1 kW: 1"
        raise RuntimeError(f"kernel size should be greater than zero, but got {window}")
    c = input.size(1)
    band = [[1.0 if -(size // 2) <= j - i <= (size - 1) // 2 else 0.0 for i in range(c)]
            for j in range(c)]
    to_last = [0] + list(range(2, input.dim())) + [1]
    back = [0, input.dim() - 1] + list(range(1, input.dim() - 1))
    sq = (input * input).permute(to_last)
    window = torch.matmul(sq, torch.tensor(band, dtype=input.dtype)).permute(back)
    div = (window * (alpha / size) + k) ** beta
    return input / div


def _clamp_min(x, lo):
    above = _mask(x > lo, x)
    return x * above + (1 - above) * lo


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    # the method, as torch's: what is no tensor raises an AttributeError
    denom = _clamp_min(input.norm(p, dim, keepdim=True), eps)
    res = input / denom
    if out is not None:
        out.copy_(res)
        return out
    return res


# ---- embedding ----

def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        with torch.no_grad():
            torch.embedding_renorm_(weight, input.contiguous(), max_norm, norm_type)
    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def _fusable_bags(mode, weight):
    """Whether embedding_bag runs _ptl_embedding_bag on the offsets of its bags: sum and mean
    of a CPU weight.  The composite it skips is its reference (the tests turn this off)."""
    return mode in ("sum", "mean") and weight.device.type == "cpu" and not weight.is_meta


def _embedding_bag_fused(flat, weight, offsets, nbags, include_last, mode, per_sample_weights,
                         padding_idx):
    """sum / mean of bags through one kernel (Note [Embedding bags] in
    src/aten/native/embedding.c) on the offsets of the bags; no gathered rows, no membership
    matrix, no bag per index.  Indices past offsets[-1] (include_last_offset) or in no bag are
    dropped; padding_idx's are dropped and the offsets recounted."""
    scale = per_sample_weights
    if include_last or nbags == 0:
        # the kernel checks the offsets: a last offset past the end (or below 0) cuts nothing
        used = max(int(offsets[-1]), 0) if include_last and nbags else 0
        if used < flat.numel():
            flat = flat[:used]
            scale = scale[:used] if scale is not None else None
    if padding_idx is not None:
        bag = aten._ptl_embedding_bag_offsets(offsets, flat.numel(), include_last)
        keep = flat[:bag.numel()] != padding_idx
        flat, bag = flat[:bag.numel()][keep], bag[keep]
        scale = scale[:keep.numel()][keep] if scale is not None else None
        counts = torch.bincount(bag, minlength=nbags)
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    return aten._ptl_embedding_bag(weight, flat, offsets, scale, nbags, mode == "mean")


def _embedding_bag_max(input, weight, starts, ends, padding_idx):
    """max of bags as one gather and one max over a [bags, longest, D] block: a 2-D input is
    its own [bags, longest] index block; else index i of bag b, [starts[b], ends[b]), sits at
    [b, i - starts[b]].  The slots past a bag's end and padding_idx's rows get -inf added,
    and a bag of none is 0 (torch's).  max(1), not amax: on ties the whole gradient goes to
    the bag's first row, as torch's."""
    dev = input.device
    lengths = list(map(operator.sub, ends, starts))
    longest = max(lengths, default=0)
    if longest <= 0:
        return torch.zeros(len(starts), weight.size(1), dtype=weight.dtype, device=weight.device)
    if input.dim() == 2:
        pick, keep = input, None
    else:
        slot = torch.arange(longest, device=dev)
        pos = torch.tensor(starts, device=dev).unsqueeze(1) + slot
        keep = slot < torch.tensor(lengths, device=dev).unsqueeze(1)
        pick = input[pos.clamp(0, input.numel() - 1)]
    if padding_idx is not None:
        keep = pick != padding_idx if keep is None else keep & (pick != padding_idx)
    rows = torch.embedding(weight, pick)
    if keep is None:
        return rows.max(1)[0]
    # an empty bag keeps its (clamped) rows and is multiplied by 0; a bias of 0 / -inf on
    # the [bags, longest] slots, not where() on the [bags, longest, D] block (10x slower)
    full = keep.any(1, keepdim=True)
    bias = torch.zeros(keep.shape, dtype=weight.dtype, device=dev)
    bias = bias.masked_fill(~(keep | ~full), float("-inf")).unsqueeze(-1)
    return (rows + bias).max(1)[0] * full.to(weight.dtype)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Bags of embeddings reduced by sum, mean or max.  On the CPU sum and mean run one fused
    kernel (_embedding_bag_fused); the composite below multiplies the gathered rows by a
    [bags, n] bag-membership matrix."""
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
            f"then it must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(
            f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    fusable = _fusable_bags(mode, weight)
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets)}")
        flat = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        nbags = input.size(0)
        if fusable:
            # bags of one width: no Python list of bounds (it cost more than the kernel)
            offsets = torch.arange(0, flat.numel(), input.size(1)) if input.size(1) else \
                torch.zeros(nbags, dtype=torch.int64)
        else:
            # rows of width 0 are empty bags (0), as they are for sum and mean
            starts = [row * input.size(1) for row in range(input.size(0))]
            ends = starts[1:] + [flat.numel()]
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        flat = input
        nbags = max(offsets.numel() - 1, 0) if include_last_offset else offsets.numel()
        if not fusable:
            # checks the offsets with PyTorch's messages (the kernel checks them on the fused
            # path); the paths that read the bounds as a list read them once, from the host
            offsets = offsets.cpu()
            aten._ptl_embedding_bag_offsets(offsets, flat.numel(), include_last_offset)
            starts = offsets.tolist()
            if include_last_offset:
                ends = starts[1:]
                starts = starts[:-1]
            else:
                ends = starts[1:] + [flat.numel()]
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub.")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.size(0)
    if max_norm is not None:
        with torch.no_grad():
            torch.embedding_renorm_(weight, flat.contiguous(), max_norm, norm_type)
    if fusable:
        return _embedding_bag_fused(flat, weight, offsets, nbags,
                                    include_last_offset and input.dim() == 1, mode,
                                    per_sample_weights, padding_idx)
    if mode == "max":
        return _embedding_bag_max(input if input.dim() == 2 else flat, weight, starts, ends,
                                  padding_idx)
    # the composite: the reference of the fused kernel, and its path off the CPU
    idx = flat.tolist()
    rows = torch.embedding(weight, flat)
    member = []
    for s, e in zip(starts, ends):
        row = [0.0] * len(idx)
        keep = [i for i in range(s, e) if idx[i] != padding_idx]
        for i in keep:
            row[i] = 1.0 / len(keep) if mode == "mean" else 1.0
        member.append(row)
    if not member:
        return torch.zeros(0, weight.size(1), dtype=weight.dtype)
    m = torch.tensor(member, dtype=weight.dtype).reshape(len(member), len(idx))
    if per_sample_weights is not None:
        m = m * per_sample_weights.unsqueeze(0)
    return torch.matmul(m, rows)


# ---- dropout ----

def _keep_mask(shape, dtype, p, input):
    """1/(1-p) where an element is kept (probability 1-p), 0 where it is dropped, on the
    input's device (a CUDA input draws the CPU's mask for the same seed: Note [CUDA random
    fills]; a meta input gets a meta mask, no values to draw).  A complex input's mask is
    complex, as PyTorch's, so its draw refuses it ("bernoulli_scalar_cpu_" not
    implemented), except for p = 1, which PyTorch takes without a draw."""
    if not dtype.is_floating_point and not (dtype.is_complex and p < 1):
        dtype = torch.get_default_dtype()
    mask = torch.empty(shape, dtype=dtype, device=input.device)
    mask = mask.bernoulli_(1 - p)
    return mask.div_(1 - p) if p < 1 else mask


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _apply_mask(input, mask, inplace):
    return input.mul_(mask) if inplace else input * mask


def dropout(input, p=0.5, training=True, inplace=False):
    """On a CUDA input, out of place and with 0 < p < 1, PyTorch's fused native_dropout (as
    its is_fused_kernel_acceptable picks): input * mask * 1/(1-p).  Elsewhere, as PyTorch's
    CPU path, input * (mask / (1-p)).  The mask is the same draw either way."""
    _check_p(p)
    if not training or p == 0:
        return input
    if not inplace and input.is_cuda and p < 1 and input.numel() > 0:
        return torch.native_dropout(input, p, True)[0]
    return _apply_mask(input, _keep_mask(input.shape, input.dtype, p, input), inplace)


def _feature_mask_shape(input, min_dim):
    if input.dim() < min_dim:
        return None
    batched = input.dim() > min_dim
    lead = 2 if batched else 1
    return list(input.shape[:lead]) + [1] * (input.dim() - lead)


def _feature_dropout(input, p, training, inplace, unbatched_dim, name):
    _check_p(p)
    if input.dim() not in (unbatched_dim, unbatched_dim + 1):
        raise RuntimeError(
            f"{name}: Expected {unbatched_dim}D or {unbatched_dim + 1}D input, but received a "
            f"{input.dim()}D input.")
    if not training or p == 0:
        return input
    shape = _feature_mask_shape(input, unbatched_dim)
    mask = _keep_mask(shape, input.dtype, p, input)
    return _apply_mask(input, mask, inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 2, "dropout1d")


def _warn_feature_dropout_rank(nd, dim):
    """PyTorch's warning of dropout{nd}d for an input of dim dims that is neither nd + 1
    nor nd + 2 (at the caller of dropout{nd}d)."""
    warnings.warn(f"dropout{nd}d: Received a {dim}-D input to dropout{nd}d, which is deprecated "
                  "and will result in an error in a future release. To retain the behavior and "
                  "silence this warning, please use dropout instead. Note that "
                  f"dropout{nd}d exists to provide channel-wise dropout on inputs with {nd} "
                  "spatial dimensions, a channel dimension, and an optional batch dimension "
                  f"(i.e. {nd + 1}D or {nd + 2}D inputs).", stacklevel=3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels: entries of dims 0 and 1 with everything after them.  As in
    PyTorch, an input that is not 4-D warns and is still treated as (N, C, ...): a 3-D input
    as (N, C, L), a 2-D one as (N, C), so each element drops on its own."""
    _check_p(p)
    dim = input.dim()
    if dim not in (3, 4):
        _warn_feature_dropout_rank(2, dim)
    if dim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.", stacklevel=2)
    return _channel_dropout(input, p, training, inplace)


def _channel_dropout(input, p, training, inplace):
    """Zeroes entries of dims 0 and 1 with everything after them (aten::feature_dropout)."""
    dim = input.dim()
    if dim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not training or p == 0:
        return input
    mask = _keep_mask(list(input.shape[:2]) + [1] * (dim - 2), input.dtype, p, input)
    return _apply_mask(input, mask, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of an (N, C, D, H, W) input.  As in PyTorch, an input that is
    not 5-D warns and gets a batch dim of 1 in front, so its dim 0 holds the channels
    dropped: rows of a 2-D input, each element of a 1-D one."""
    _check_p(p)
    dim = input.dim()
    if dim not in (4, 5):
        _warn_feature_dropout_rank(3, dim)
    if dim == 5:
        return _channel_dropout(input, p, training, inplace)
    out = _channel_dropout(input.unsqueeze(0), p, training, inplace)
    return input if inplace else out.squeeze(0)


_SELU_NEG = -_SELU_ALPHA * _SELU_SCALE


def _alpha_dropout(input, p, training, inplace, mask_shape):
    _check_p(p)
    if not training or p == 0:
        return input
    if p == 1:
        return input.mul_(0) if inplace else input * 0
    keep = _keep_mask(mask_shape, input.dtype, p, input)
    keep = _mask(keep != 0, input)
    a = 1.0 / math.sqrt((_SELU_NEG * _SELU_NEG * p + 1) * (1 - p))
    # dropped: a * _SELU_NEG + b, SELU's negative saturation moved by the affine correction
    b = (1 - keep) * (_SELU_NEG * a) - _SELU_NEG * a * p
    scale = keep * a
    if inplace:
        return input.mul_(scale).add_(b)
    return input * scale + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, list(input.shape))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = list(input.shape[:2]) + [1] * (input.dim() - 2)
    return _alpha_dropout(input, p, training, inplace, shape)


# ---- attention and distances ----

_CAUSAL_BIAS = {}


def _causal_bias(L, S, dtype):
    """[L, S] with 0 where key j <= query i (top-left aligned) and -inf elsewhere, built once
    per (L, S, dtype) and only ever read."""
    key = (L, S, dtype)
    bias = _CAUSAL_BIAS.get(key)
    if bias is None:
        causal = torch.arange(L).unsqueeze(1) >= torch.arange(S).unsqueeze(0)
        bias = torch.where(causal, 0.0, -math.inf).to(dtype)
        if len(_CAUSAL_BIAS) >= 64:
            _CAUSAL_BIAS.clear()
        _CAUSAL_BIAS[key] = bias
    return bias


def _sdpa_fusable(query, key, value, attn_mask, dropout_p):
    """Whether the fused kernel computes this call: no dropout, float tensors of one dtype
    and device and rank 2 to 4 with the same batch dims and head size, and a mask (not
    requiring grad) that broadcasts to [*, L, S].  On CUDA (attention.cu's kernels, Note
    [CUDA flash attention]) the head size is at most 256, as for PyTorch's flash kernel;
    larger heads take the composite."""
    if dropout_p != 0.0 or not 2 <= query.dim() <= 4 or query.device.type not in ("cpu", "cuda"):
        return False
    if key.device != query.device or value.device != query.device:
        return False
    if query.device.type == "cuda" and query.size(-1) > 256:
        return False
    dt = query.dtype
    if not dt.is_floating_point or key.dtype != dt or value.dtype != dt:
        return False
    if key.dim() != query.dim() or value.dim() != query.dim():
        return False
    batch = query.shape[:-2]
    if key.shape[:-2] != batch or value.shape[:-2] != batch or value.size(-2) != key.size(-2):
        return False
    if key.size(-1) != query.size(-1) or value.size(-1) != query.size(-1):
        return False
    if attn_mask is None:
        return True
    if attn_mask.requires_grad or attn_mask.dim() > query.dim() or attn_mask.device != query.device:
        return False
    if attn_mask.dtype != torch.bool and attn_mask.dtype != dt:
        return False
    target = list(batch) + [query.size(-2), key.size(-2)]
    return all(m in (1, t) for m, t in zip(reversed(attn_mask.shape), reversed(target)))


def _sdpa_fused(query, key, value, attn_mask, is_causal, scale):
    """aten::_scaled_dot_product_flash_attention_for_cpu on [B, H, L, E] views of rank-2 to
    rank-4 inputs; a bool mask becomes 0 / -inf (src/aten/native/attention.c)."""
    rank = query.dim()
    q, k, v = query, key, value
    for _ in range(4 - rank):
        q, k, v = q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)
    mask = attn_mask
    if mask is not None:
        if mask.dtype == torch.bool:
            mask = torch.where(mask, 0.0, -math.inf).to(query.dtype)
        while mask.dim() < 4:
            mask = mask.unsqueeze(0)
    out = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, is_causal,
                                                           attn_mask=mask, scale=scale)[0]
    for _ in range(4 - rank):
        out = out.squeeze(0)
    return out


def _flash_refusal(query, key, value, dropout_p):
    """Why PyTorch's CPU flash kernel would refuse these inputs (its first reason), or None."""
    if dropout_p != 0.0:
        return "Both fused kernels do not support non-zero dropout."
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        return ("All fused kernels requires query, key and value to be 4 dimensional, but got "
                f"Query dim: {query.dim()}, Key dim: {key.dim()}, Value dim: {value.dim()} "
                "instead.")
    if not query.size(-1) == key.size(-1) == value.size(-1):
        return ("Flash attention requires q,k,v to have the same last dimension. Got "
                f"Query.size(-1): {query.size(-1)}, Key.size(-1): {key.size(-1)}, "
                f"Value.size(-1): {value.size(-1)} instead.")
    return None


def _check_sdp_backends(query, key, value, dropout_p):
    """Raises as PyTorch's CPU selection does when the allowed backends
    (torch.nn.attention.sdpa_kernel) leave none for these inputs; called only while math is
    off, since the math backend takes any call.  Note [SDPA backends on the CPU]: the
    switches decide only which calls run and which raise, as in PyTorch.  What computes them
    is ours: while flash is allowed, the fused kernel takes every call it can (ranks 2 to 4,
    _sdpa_fusable) and the composite the rest (both compute the same function); with math
    alone, the composite takes all.  The other backends exist only on CUDA in PyTorch, so
    allowing only them leaves nothing."""
    if query.numel() == 0 or key.numel() == 0 or value.numel() == 0:
        return   # PyTorch answers empty inputs before it looks at the switches
    if not torch.backends._sdp_enabled["flash"]:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This "
                           "is likely due to turning off both the math kernel and the fused "
                           "kernels.")
    reason = _flash_refusal(query, key, value, dropout_p)
    if reason is not None:
        warnings.warn("Flash attention kernel not used because:", stacklevel=3)
        warnings.warn(reason, stacklevel=3)
        raise RuntimeError("No available kernel.  Aborting execution.")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(q k^T * scale + mask) v.  [*, L, E], [*, S, E], [*, S, Ev] -> [*, L, Ev];
    rows whose every key is masked out give zeros (as torch's CPU kernel does)."""
    try:
        return _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    except Exception:
        given = {k: v for k, v in (("scale", scale), ("enable_gqa", enable_gqa))
                 if v is not None and v is not False}
        _native_fault("scaled_dot_product_attention", query, key, value, attn_mask, dropout_p,
                      is_causal, defaults=(None, 0.0, False), **given)
        raise


def _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    L, S = query.size(-2), key.size(-2)
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    if enable_gqa and query.dim() >= 3 and key.size(-3) != query.size(-3):
        rep = query.size(-3) // key.size(-3)

        def repeat_heads(t):
            shape = list(t.shape)
            t = t.unsqueeze(-3).expand(shape[:-2] + [rep] + shape[-2:])
            return t.reshape(shape[:-3] + [shape[-3] * rep] + shape[-2:])
        key, value = repeat_heads(key), repeat_heads(value)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if not torch.backends._sdp_enabled["math"]:
        _check_sdp_backends(query, key, value, dropout_p)
    if (torch.backends._sdp_enabled["flash"]
            and _sdpa_fusable(query, key, value, attn_mask, dropout_p)):
        return _sdpa_fused(query, key, value, attn_mask, is_causal, scale)
    # scale whichever is smaller, the query [L, E] or the scores [L, S]
    if query.size(-1) < S:
        scores = torch.matmul(query * scale, key.transpose(-2, -1))
    else:
        scores = torch.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal and S > 0:
        # every row keeps key 0, so no row is fully masked: one add of a cached bias
        attn = softmax(scores + _causal_bias(L, S, scores.dtype), -1)
        if dropout_p > 0.0:
            attn = dropout(attn, dropout_p, True)
        return torch.matmul(attn, value)
    bias = _causal_bias(L, S, scores.dtype) if is_causal else None
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            extra = torch.where(attn_mask, 0.0, -math.inf).to(scores.dtype)
        else:
            extra = attn_mask
        bias = extra if bias is None else bias + extra
    if bias is not None:
        # a row with no finite bias would be 0/0: give it a zero bias, then zero its output
        live = (bias > -math.inf).any(-1, keepdim=True)
        if not bool(live.all()):
            bias = torch.where(live, bias, 0.0)
        scores = scores + bias
    attn = softmax(scores, -1)
    if bias is not None and not bool(live.all()):
        attn = attn * _mask(live, attn)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return torch.matmul(attn, value)


@native
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps)) along dim, x1 and x2 broadcast in their
    common dtype, which must be floating point (complex is refused, as PyTorch)."""
    common = torch.result_type(x1, x2)
    if not common.is_floating_point:
        from ..linalg import _legacy
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{_legacy(common)}")
    x1, x2 = torch.broadcast_tensors(x1.to(common), x2.to(common))
    n1 = _clamp_min(torch.linalg.vector_norm(x1, 2, dim, True), eps)
    n2 = _clamp_min(torch.linalg.vector_norm(x2, 2, dim, True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


@native
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    d = x1 - x2 + eps
    dim = -1 if d.dim() > 0 else 0
    if d.dim() == 0:
        return torch.linalg.vector_norm(d.reshape(1), p, 0, keepdim)
    return torch.linalg.vector_norm(d, p, dim, keepdim)


_PDIST_CHUNK = 1 << 18   # pdist's elements of differences at a time (off the CPU)


@native
def pdist(input, p=2):
    """The p-norm distances between the rows of input [N, M]: the upper triangle of
    cdist(input, input) without the diagonal, row by row (N * (N - 1) / 2 values)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if not p >= 0:   # NaN too, as PyTorch's check
        raise RuntimeError("pdist only supports non-negative p values")
    if input.device.type == "cpu":   # float32 / float64 only, as PyTorch's CPU kernel
        return _C._op("aten::_pdist_forward")(input.contiguous(), p)   # Note [Pdist loops]
    i, j = torch.triu_indices(input.size(0), input.size(0), 1, device=input.device)
    if input.size(1) == 0:   # no coordinates: every distance 0 (the inf norm has no identity)
        return (input[i] - input[j]).sum(1)
    # on a device: _PDIST_CHUNK differences at a time, so that they stay in cache (the same
    # values and bits as one pass)
    step = max(1, _PDIST_CHUNK // input.size(1))
    if i.numel() <= step:
        return torch.linalg.vector_norm(input[i] - input[j], p, 1)
    return torch.cat([torch.linalg.vector_norm(input[i[k:k + step]] - input[j[k:k + step]], p, 1)
                      for k in range(0, i.numel(), step)])


@_autocast_to_float32
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Poisson negative log likelihood: exp(input) - target * input (log_input) or
    input - target * log(input + eps), plus Stirling's approximation of log(target!)
    where target > 1 when full."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not a valid value for reduction")
    if not (isinstance(input, torch.Tensor) and isinstance(target, torch.Tensor)
            and isinstance(log_input, bool) and isinstance(full, bool)):
        _native_fault("poisson_nll_loss", input, target, log_input, full, eps,
                      _REDUCTIONS[reduction])
    if log_input:
        loss = torch.exp(input) - target * input
    else:
        loss = input - target * torch.log(input + eps)
    if full:
        stirling = target * torch.log(target) - target + 0.5 * torch.log(2 * math.pi * target)
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log likelihood 0.5 * (log(var) + (input - target)^2 / var) with var
    clamped to eps (without blocking its gradient); var may be one dimension short of
    input or differ from it in one broadcastable dimension (homoscedastic)."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * torch.ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape)[:-1] == tuple(var.shape):
            var = torch.unsqueeze(var, -1)
        elif not (input.dim() == var.dim()
                  and sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with torch.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (torch.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """max(margin + d(anchor, positive) - d(anchor, negative), 0) for any distance d
    (pairwise_distance by default); swap uses min(d(a, n), d(p, n)) as the negative."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative "
            f"{n_dim}D inputs")
    if distance_function is None:
        distance_function = pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = torch.minimum(dist_neg, distance_function(positive, negative))
    return _reduce(torch.clamp_min(margin + dist_pos - dist_neg, 0), reduction)


# ---- CTC loss ----

# The log of "impossible": finite, so logsumexp over impossible paths keeps a finite
# (zero) gradient where -inf would give NaN; a final log-likelihood below half of it
# means no alignment exists (an infinite loss).
_CTC_NEG = -1e30

_TYPE_NAMES = {
    torch.bool: "Bool", torch.uint8: "Byte", torch.int8: "Char", torch.int16: "Short",
    torch.int32: "Int", torch.int64: "Long", torch.float16: "Half", torch.bfloat16: "BFloat16",
}


def _ctc_lengths(lengths, name):
    if isinstance(lengths, torch.Tensor):
        if lengths.is_floating_point() or lengths.dtype == torch.bool:
            raise RuntimeError(f"{name} must be integral")
        return [int(v) for v in lengths.reshape(-1).tolist()]
    return [int(v) for v in lengths]


def _ctc_lengths_kind(lengths):
    if isinstance(lengths, torch.Tensor):
        return "Tensor"
    if isinstance(lengths, (list, tuple)) and all(isinstance(v, int) for v in lengths):
        return "ints"
    return None


def _ctc_check_overload(input_lengths, target_lengths, blank, zero_infinity):
    """torch's two overloads: lengths both tensors or both tuples of ints (a TypeError in
    torch's words, without its per-overload "didn't match" lines)."""
    kind = _ctc_lengths_kind(input_lengths)
    if kind is not None and kind == _ctc_lengths_kind(target_lengths):
        return
    got = ", ".join("Tensor" if isinstance(v, torch.Tensor) else type(v).__name__
                    for v in (input_lengths, target_lengths, blank, 0, zero_infinity))
    tail = ("int blank = 0, int reduction = at::Reduction::Mean, bool zero_infinity = False)")
    raise TypeError(
        "ctc_loss() received an invalid combination of arguments - got (Tensor, Tensor, "
        f"{got}), but expected one of:\n"
        " * (Tensor log_probs, Tensor targets, tuple of ints input_lengths, tuple of ints "
        "target_lengths, " + tail + "\n"
        " * (Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, "
        + tail + "\n")


def _ctc_check(log_probs, targets, il, tl, blank):
    """torch's argument checks for ctc_loss, in its order; returns max target length."""
    where = " (while checking arguments for ctc_loss_allocate_outputs)"
    if log_probs.dtype not in (torch.float32, torch.float64):
        name = _TYPE_NAMES.get(log_probs.dtype, log_probs.dtype)
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{name}'")
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    if log_probs.dim() != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.dim()}-dimensional "
                           "tensor for argument #1 'log_probs'" + where)
    if targets.dim() not in (1, 2):
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.dim()}-dimensional "
                           "tensor for argument #2 'targets'" + where)
    n, n_labels = log_probs.size(1), log_probs.size(2)
    if not 0 <= blank < n_labels:
        raise RuntimeError("blank must be in label range")
    if len(il) != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tl) != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    for v in tl:
        if v < 0:
            raise RuntimeError(
                f"Expected target_lengths to have value at least 0, but got value {v}" + where)
    max_tl = max(tl, default=0)
    if targets.dim() == 1 and targets.size(0) != sum(tl):
        raise RuntimeError(f"Expected tensor to have size {sum(tl)} at dimension 0, but got "
                           f"size {targets.size(0)} for argument #2 'targets'" + where)
    if targets.dim() == 2:
        if targets.size(0) != n:
            raise RuntimeError(f"Expected tensor to have size {n} at dimension 0, but got size "
                               f"{targets.size(0)} for argument #2 'targets'" + where)
        if targets.size(1) < max_tl:
            raise RuntimeError(f"Expected tensor to have size at least {max_tl} at dimension 1, "
                               f"but got size {targets.size(1)} for argument #2 'targets'" + where)
    for v in il:
        if v < 0:
            raise RuntimeError(
                f"Expected input_lengths to have value at least 0, but got value {v}" + where)
        if v > log_probs.size(0):
            raise RuntimeError(f"Expected input_lengths to have value at most "
                               f"{log_probs.size(0)}, but got value {v}" + where)
    return max_tl


def _ctc_padded_targets(targets, tl, max_tl, blank):
    """[N, S] or concatenated [sum(tl)] targets -> [N, max_tl] int64, blank past each length."""
    targets = targets.to(torch.int64)
    lengths = torch.tensor(tl, dtype=torch.int64).unsqueeze(1)
    pos = torch.arange(max_tl).unsqueeze(0)
    if targets.dim() == 2:
        padded = targets[:, :max_tl]
    else:
        starts = torch.tensor([sum(tl[:i]) for i in range(len(tl))], dtype=torch.int64)
        index = (starts.unsqueeze(1) + pos).clamp(max=max(targets.size(0) - 1, 0))
        padded = targets.index_select(0, index.reshape(-1)).reshape(len(tl), max_tl)
    return torch.where(pos < lengths, padded, torch.full_like(padded, blank))


@_autocast_to_float32
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist Temporal Classification loss: -log of the total probability of all
    alignments of each target with its input (Graves et al. 2006), as a composite.

    The targets with a blank around every label form the extended labels l' [N, L = 2S+1];
    alpha[n, s] = log P(prefix of l' up to s at time t).  One Python step per time t,
    vectorized over batch and s: alpha <- logsumexp(alpha[s], alpha[s-1], alpha[s-2] where
    l'[s] != l'[s-2]) + log_probs[t, n, l'[s]], frozen once t >= input_lengths[n].  It
    starts from a virtual alpha = [0, -big, ...] before t = 0; the loss is -logsumexp of the
    last two positions (2 tl, 2 tl - 1).  Autograd differentiates the recursion; like
    torch's kernel, the gradient gets exp(log_probs) added for t < input_length (the term
    that log_softmax's backward cancels; it makes raw-log_probs grads equal torch's).
    Where torch's gradient is NaN (an infinite loss without zero_infinity, or a -inf entry
    of log_probs), this one is finite."""
    red = _reduction_enum(reduction)
    _ctc_check_overload(input_lengths, target_lengths, blank, zero_infinity)
    il = _ctc_lengths(input_lengths, "input_lengths")
    tl = _ctc_lengths(target_lengths, "target_lengths")
    batched = log_probs.dim() == 3
    if not batched:
        log_probs = log_probs.unsqueeze(1)
    max_tl = _ctc_check(log_probs, targets, il, tl, blank)
    t_max, n = log_probs.size(0), log_probs.size(1)
    length = 2 * max_tl + 1
    labels = _ctc_padded_targets(targets, tl, max_tl, blank)
    # extended labels l' [N, L]: blank, l1, blank, l2, ..., blank
    ext = torch.stack([torch.full_like(labels, blank), labels], 2).reshape(n, 2 * max_tl)
    ext = torch.cat([ext, torch.full((n, 1), blank, dtype=torch.int64)], 1)
    skip = torch.cat([torch.zeros(n, min(2, length), dtype=torch.bool),
                      ext[:, 2:] != ext[:, :-2]], 1)
    # emissions [T, N, L]: log_probs of each extended label
    emit = log_probs.gather(2, ext.unsqueeze(0).expand(t_max, n, length)).clamp_min(_CTC_NEG)
    neg = torch.full((n, length), _CTC_NEG, dtype=log_probs.dtype)
    neg2 = torch.full((n, 2), _CTC_NEG, dtype=log_probs.dtype)
    alpha = torch.where(torch.arange(length) == 0, torch.zeros_like(neg), neg)
    active = torch.tensor(il, dtype=torch.int64).unsqueeze(1) > torch.arange(t_max)
    # one unbind: a backward through emit[t] would build a [T, N, L] gradient per step
    for t, emit_t in enumerate(emit.unbind(0)):
        # padded[:, 2 + s - k] is alpha[s - k] (-big before the start)
        padded = torch.cat([neg2, alpha], 1)
        step = torch.where(skip, padded[:, :length], neg)
        paths = torch.stack([alpha, padded[:, 1:length + 1], step])
        alpha = torch.where(active[:, t:t + 1], torch.logsumexp(paths, 0) + emit_t, alpha)
    last = torch.tensor(tl, dtype=torch.int64).unsqueeze(1) * 2
    ends = torch.cat([alpha.gather(1, last),
                      torch.where(last > 0, alpha.gather(1, (last - 1).clamp_min(0)),
                                  neg[:, :1])], 1)
    log_likelihood = torch.logsumexp(ends, 1)
    loss = torch.where(log_likelihood < _CTC_NEG / 2,
                       torch.full_like(log_likelihood, math.inf), -log_likelihood)
    if log_probs.requires_grad and torch.is_grad_enabled():
        mask = active.t().unsqueeze(2).to(log_probs.dtype)
        extra = (log_probs.exp() * mask).sum((0, 2))
        loss = loss + (extra - extra.detach())
    if zero_infinity:
        loss = torch.where(loss == math.inf, torch.zeros_like(loss), loss)
    if red == 1:
        return (loss / torch.tensor(tl, dtype=loss.dtype).clamp_min(1)).mean()
    if red == 2:
        return loss.sum()
    return loss if batched else loss.squeeze(0)


def channel_shuffle(input, groups):
    """Splits the channels (dim 1) of input [N, C, *] into `groups` groups and interleaves
    them: channel k of group g moves to position k * groups + g."""
    return _channel_shuffle(input, groups, "channel_shuffle")


def native_channel_shuffle(input, groups):
    return _channel_shuffle(input, groups, "native_channel_shuffle")


def _channel_shuffle(input, groups, name):
    try:
        return _shuffle(input, groups)
    except Exception:
        _native_fault(name, input, groups)
        raise


def _shuffle(input, groups):
    if input.dim() <= 2:
        raise RuntimeError("channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError("Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    c = input.size(1)
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    n, rest = input.size(0), list(input.shape[2:])
    x = input.reshape([n, groups, c // groups] + rest).transpose(1, 2)
    return x.reshape(list(input.shape))


def one_hot(tensor, num_classes=-1):
    """A LongTensor of tensor's shape + [num_classes] with a 1 at each value's class
    (num_classes=-1: one more than the largest value).  Kernel: aten::one_hot."""
    return torch._C._op("aten::one_hot")(tensor, num_classes)


from ._functional_conv import *  # noqa: E402,F401,F403  (convolution, pooling, padding, resampling)
from ._functional_attention import *  # noqa: E402,F401,F403  (multi_head_attention_forward)
from . import _functional_attention, _functional_conv  # noqa: E402
from ._functional_linear_cross_entropy import linear_cross_entropy  # noqa: E402,F401
from ._functional_attention import _canonical_mask, _mha_shape_check, _none_or_dtype  # noqa: E402,F401

# each public function goes to __torch_function__ first (Note [Torch function]), but sigmoid
# and tanh: PyTorch's call the Tensor methods, and those are what a mode sees
_overrides._route_functions(globals(), skip=("sigmoid", "tanh"))
_threshold = threshold

# What __torch_function__ sees of each call (Note [The call __torch_function__ sees]): the
# functions PyTorch writes in C pass the call as made, as torch._C._nn.<name> (these, which
# live there here too) or as torch.<name> (_C_TORCH, which pytorchlite/_nn_ops.py presents
# so); the others pass it as PyTorch's Python source does.
_C_NN = ("avg_pool2d", "avg_pool3d", "elu_", "gelu", "hardtanh_", "leaky_relu_", "linear",
         "logsigmoid", "one_hot", "scaled_dot_product_attention", "softplus", "softshrink")
_C_TORCH = ("adaptive_avg_pool1d", "avg_pool1d", "bilinear", "celu_", "channel_shuffle",
            "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
            "conv_transpose3d", "cosine_similarity", "hardshrink", "native_channel_shuffle",
            "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "prelu", "relu_",
            "rrelu_", "selu_", "threshold_")
_C._nn = _sys.modules["pytorchlite._C._nn"] = _types.ModuleType("pytorchlite._C._nn")
logsigmoid.__name__ = logsigmoid.__qualname__ = "log_sigmoid"   # PyTorch's C name
for _name in _C_NN:
    setattr(_C._nn, globals()[_name].__name__, globals()[_name])
    globals()[_name].__module__ = "pytorchlite._C._nn"
_PYTHON = (set(__all__) | set(_functional_conv.__all__) | set(_functional_attention.__all__)) - \
    set(_C_NN) - set(_C_TORCH) - {"sigmoid", "tanh", "upsample", "upsample_bilinear",
                                  "upsample_nearest"}
for _name in _PYTHON:
    _overrides._present_filled(globals()[_name], **{
        "multi_head_attention_forward": {"order": (
            "training", "key_padding_mask", "need_weights", "attn_mask", "is_causal",
            "use_separate_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight",
            "static_k", "static_v", "average_attn_weights")},
        "l1_loss": {"omit_if_default": ("weight",)},
    }.get(_name, {}))
del _name
