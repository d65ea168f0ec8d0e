"""The torch-namespace forms of the nn.functional ops (torch.conv2d, torch.dropout,
torch.layer_norm, torch.kl_div, torch.lstm_cell, ...), with ATen's signatures: booleans and
probabilities positional (torch.dropout(input, p, train)), batch_norm's and instance_norm's
weights before the running statistics, reductions as ATen's integers (0 none, 1 mean, 2 sum;
none by default, as PyTorch's bindings parse the default),
grid sampling modes as integers, the cuDNN switches accepted and ignored.  Each calls the
nn.functional implementation (or the RNN cell step of nn/modules/rnn.py); where the signature
is the same as F's, the name is bound to F's function itself (which checks its arguments
where it fails, Note [Native signatures of composites]); the others check every call against
PyTorch's schemas (@native)."""
from .nn import functional as F
from . import overrides as _overrides
from ._tensor_types import _NAME as _SCALAR_NAMES, type_name as _type_name
from ._native_signature import native
from .nn.modules import rnn as _rnn
from ._tensor import Tensor
from ._reductions import native_norm as _native_norm
from .autograd.grad_mode import no_grad as _no_grad

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout",
    "feature_alpha_dropout_", "feature_dropout", "feature_dropout_", "batch_norm",
    "layer_norm", "group_norm", "instance_norm", "rms_norm", "max_pool1d", "max_pool2d",
    "max_pool3d", "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d",
    "adaptive_max_pool1d", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
    "native_channel_shuffle", "prelu", "selu", "selu_", "celu", "celu_", "rrelu", "rrelu_",
    "bilinear", "cosine_similarity", "pairwise_distance", "pdist", "kl_div",
    "binary_cross_entropy_with_logits", "cosine_embedding_loss", "hinge_embedding_loss",
    "margin_ranking_loss", "triplet_margin_loss", "poisson_nll_loss", "ctc_loss",
    "grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "conv_tbc", "embedding_bag",
    "lstm", "gru", "rnn_tanh", "rnn_relu", "batch_norm_update_stats", "norm_except_dim",
]

# the same signature as nn.functional's: the same function
conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d = F.conv_transpose1d, F.conv_transpose2d
conv_transpose3d, conv_tbc = F.conv_transpose3d, F.conv_tbc
adaptive_avg_pool1d = F.adaptive_avg_pool1d
pixel_shuffle, pixel_unshuffle, prelu, bilinear = (
    F.pixel_shuffle, F.pixel_unshuffle, F.prelu, F.bilinear)
cosine_similarity, pairwise_distance, pdist = F.cosine_similarity, F.pairwise_distance, F.pdist
channel_shuffle, native_channel_shuffle = F.channel_shuffle, F.native_channel_shuffle
grid_sampler_2d, grid_sampler_3d = F.aten.grid_sampler_2d, F.aten.grid_sampler_3d

_REDUCTION_NAMES = ("none", "mean", "sum")


def _reduction(reduction):
    """ATen's reduction integer as nn.functional's name."""
    if reduction not in (0, 1, 2):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTION_NAMES[reduction]


def _check_p(p):
    """ATen's dropout check: a RuntimeError, where nn.functional raises ValueError."""
    if p < 0.0 or p > 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


# ---- dropout: (input, p, train), all three required ----

def _dropout_form(name, f_dropout, inplace):
    """torch.NAME(input, p, train): F's dropout with ATen's check of p; feature_dropout
    zeroes whole channels of (N, C, *) (a mask of shape (N, C, 1, ...))."""
    def dropout_form(input, p, train):
        _check_p(p)
        return f_dropout(input, p, train, inplace)
    dropout_form.__name__ = dropout_form.__qualname__ = name
    return native(dropout_form)


dropout = _dropout_form("dropout", F.dropout, False)
dropout_ = _dropout_form("dropout_", F.dropout, True)
feature_dropout = _dropout_form("feature_dropout", F._channel_dropout, False)
feature_dropout_ = _dropout_form("feature_dropout_", F._channel_dropout, True)
alpha_dropout = _dropout_form("alpha_dropout", F.alpha_dropout, False)
alpha_dropout_ = _dropout_form("alpha_dropout_", F.alpha_dropout, True)
feature_alpha_dropout = _dropout_form("feature_alpha_dropout", F.feature_alpha_dropout, False)
feature_alpha_dropout_ = _dropout_form("feature_alpha_dropout_", F.feature_alpha_dropout, True)


# ---- normalization: weights before running statistics, cuDNN switch ignored ----

@native
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


@native
def batch_norm_update_stats(input, running_mean, running_var, momentum, *, out=None):
    """(mean, biased variance) of input per channel (dim 1), as a training batch_norm computes
    them, and running_mean / running_var (where given) moved toward the mean and the
    unbiased variance by momentum, in place.  PyTorch gives no derivative (its results carry
    grad_fn=<NotImplemented>); these carry none."""
    if not input.is_floating_point():
        raise NotImplementedError("\"batch_norm_update_stats_cpu\" not implemented for "
                                  f"'{_SCALAR_NAMES[input.dtype]}'")
    channels = input.size(1)
    if input.numel() == 0:
        raise RuntimeError("input tensor must have at least one element, but got input_sizes = "
                           f"{list(input.shape)}")
    for stat in (running_mean, running_var):
        if stat is not None and stat.dtype != input.dtype:
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    dims = [0] + list(range(2, input.dim()))
    with _no_grad():
        mean, var = input.mean(dims), input.var(dims, correction=0)
        n = input.numel() // channels
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean, alpha=momentum)
        if running_var is not None:
            unbiased = var * (n / (n - 1)) if n > 1 else var.new_full(var.shape, float("nan"))
            running_var.mul_(1 - momentum).add_(unbiased, alpha=momentum)
    if out is not None:
        for target, value in zip(out, (mean, var)):
            target.resize_(value.shape).copy_(value)
        return tuple(out)
    return mean, var


@native
def norm_except_dim(v, pow=2, dim=0):
    """The pow-norm of v over every dimension but dim, kept as size-1 dimensions (dim -1:
    the norm of every element, 0-dim); what nn.utils.weight_norm divides by."""
    if dim == -1:
        return _native_norm(v, pow)
    if v.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = dim % v.dim() if -v.dim() <= dim < v.dim() else dim
    if not 0 <= d < v.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of [{-v.dim()}, "
                         f"{v.dim() - 1}], but got {dim})")
    others = [k for k in range(v.dim()) if k != d]
    return _native_norm(v, pow, others, True) if others else v.abs()


@native
def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


@native
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


@native
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """F.rms_norm's signature, but a function of its own: PyTorch's F.rms_norm is Python and
    its torch.rms_norm C, so __torch_function__ (and a torch.fx trace) tells them apart."""
    return F.rms_norm(input, normalized_shape, weight, eps)


# ---- pooling: stride () means the kernel size; no return_indices switch ----

@native
def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


@native
def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


@native
def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)


@native
def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    return F.max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)


@native
def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True):
    return F.avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


@native
def adaptive_max_pool1d(input, output_size):
    """(values, indices), always."""
    return F.adaptive_max_pool1d_with_indices(input, output_size)


# ---- activations without F's inplace switch ----

@native
def selu(input):
    return F.selu(input)


@native
def selu_(input):
    return F.selu_(input)


@native
def celu(input, alpha=1.0):
    return F.celu(input, alpha)


@native
def celu_(input, alpha=1.0):
    return F.celu_(input, alpha)


@native
def rrelu(input, lower=0.125, upper=1.0 / 3, training=False, generator=None):
    return F._rrelu(input, lower, upper, training, False, generator)


@native
def rrelu_(input, lower=0.125, upper=1.0 / 3, training=False, generator=None):
    return F._rrelu(input, lower, upper, training, True, generator)


# ---- losses: reduction as ATen's integer ----
# The default reduction is 0 (none), as PyTorch's torch-namespace bindings behave: the schema
# says `int reduction=Mean`, and PyTorch's Python argument parser reads that default with atol,
# which gives 0; torch.kl_div(input, target) returns the elementwise loss.

@native
def kl_div(input, target, reduction=0, *, log_target=False):
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


@native
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    _reduction(reduction)   # ATen's check of the integer
    return F._bce_with_logits(input, target, weight, pos_weight, reduction)


@native
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction))


@native
def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


@native
def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction))


@native
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False,
                        reduction=0):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


@native
def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction))


@native
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction), zero_infinity)


# ---- grid sampling: modes as ATen's integers ----

_INTERPOLATION_MODES = ("bilinear", "nearest", "bicubic")
_PADDING_MODES = ("zeros", "border", "reflection")


@native
def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """interpolation_mode 0 bilinear, 1 nearest, 2 bicubic; padding_mode 0 zeros, 1 border,
    2 reflection."""
    if interpolation_mode not in (0, 1, 2):
        raise RuntimeError(f"grid_sampler(): unknown interpolation_mode {interpolation_mode}")
    if padding_mode not in (0, 1, 2):
        raise RuntimeError(f"grid_sampler(): unknown padding_mode {padding_mode}")
    return F.grid_sample(input, grid, _INTERPOLATION_MODES[interpolation_mode],
                         _PADDING_MODES[padding_mode], align_corners)


@native
def affine_grid_generator(theta, size, align_corners):
    """The ATen op itself, as torch's: F.affine_grid's checks (a floating theta of its
    shape) are F's alone, so a complex theta computes here as in PyTorch."""
    from . import ops
    return ops.aten.affine_grid_generator(theta, list(size), align_corners)


# ---- embedding bags: F.embedding_bag's output and the kernel's three bookkeeping tensors ----

# Note [embedding_bag's bookkeeping outputs]
# torch.embedding_bag returns, next to the bags, what PyTorch's CPU kernel keeps for its
# backward, and these are PyTorch's values:
#   offset2bag [n]  the bag of each index: the number of bag starts at or before it, less one
#                   (an empty bag is skipped; the last bag runs to the end of indices).  Empty
#                   for mode sum on the kernel's fast path: a float32 / float16 / bfloat16
#                   weight of unit column stride, no padding_idx, per_sample_weights (if any)
#                   of unit stride.
#   bag_size [bags] for mean and max, each bag's indices less its padding_idx entries; for
#                   sum, zeros: len(offsets) of them unless weight or per_sample_weights
#                   requires grad (then one per bag).
#   max_indices     for max, [bags, D]: the row of weight holding the bag's first maximum in
#                   each column (0 for a bag without rows); otherwise a copy of bag_size.
# Their dtype is int32 where indices and offsets both are, else int64.  With
# include_last_offset the bookkeeping's last bag reaches to the end of indices, as PyTorch's
# does, while the output's last bag ends at offsets[-1] (F.embedding_bag's): the two agree
# when offsets[-1] == len(indices), as the documentation asks.

_BAG_MODES = ("sum", "mean", "max")


def _embedding_bag_checks(weight, indices, offsets, mode, per_sample_weights, padding_idx):
    """PyTorch's checks of the ATen op, with its messages; padding_idx in [0, V) or None."""
    import pytorchlite as torch
    where = " (while checking arguments for embedding_bag)"
    for arg, t, ok, names in ((1, weight, torch.is_floating_point(weight),
                               "Half, BFloat16, Float, Double"),
                              (1, indices, indices.dtype in (torch.int64, torch.int32),
                               "Long, Int"),
                              (1, offsets, offsets.dtype in (torch.int64, torch.int32),
                               "Long, Int")):
        if not ok:
            what = "weight" if t is weight else "indices"
            raise RuntimeError(f"Expected tensor for argument #{arg} '{what}' to have one of the "
                               f"following scalar types: {names}; but got "
                               f"{_type_name(t.dtype, t.device)} instead{where}")
    if weight.dim() != 2:
        raise RuntimeError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                           f"{weight.dim()}")
    if offsets.dim() != 1:
        raise RuntimeError(f"offsets has to be a 1D Tensor, but got Tensor of dimension "
                           f"{offsets.dim()}")
    if indices.dim() != 1:
        raise RuntimeError(f"input has to be a 1D Tensor, but got Tensor of dimension "
                           f"{indices.dim()}")
    if mode not in (0, 1, 2):
        raise RuntimeError("`mode` must be sum, mean, or max.")
    if per_sample_weights is not None:
        if mode != 0:
            raise RuntimeError("embedding_bag: per_sample_weights only supported with mode='sum'")
        if per_sample_weights.dtype != weight.dtype:
            raise RuntimeError(
                "Expected tensor for argument #1 'weight' to have the same type as tensor for "
                "argument #1 'per_sample_weights'; but type "
                f"{_type_name(weight.dtype, weight.device)} does not equal "
                f"{_type_name(per_sample_weights.dtype, per_sample_weights.device)}{where}")
        if per_sample_weights.numel() != indices.numel():
            raise RuntimeError("Expected per_sample_weights.value().numel() == indices.numel() "
                               "to be true, but got false.  (Could this error message be "
                               "improved?  If so, please report an enhancement request to "
                               "PyTorch.)")
    rows = weight.size(0)
    bad = ((indices < 0) | (indices >= rows)).nonzero()
    if bad.numel():
        i = int(bad[0, 0])
        value = int(indices[i])
        if mode == 2:
            raise RuntimeError("embedding_bag: Expected idx >= 0 && idx < num_embeddings but "
                               f"found idx to be {value}")
        raise RuntimeError(f"Index {i} of input takes value {value} which is not in the valid "
                           f"range [0, {rows})")
    if padding_idx is None:
        return None
    if not -rows <= padding_idx < rows:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, -{rows} "
                           f"through {rows - 1}, but got {padding_idx}")
    return padding_idx + rows if padding_idx < 0 else padding_idx


@native
def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """(output, offset2bag, bag_size, max_indices): F.embedding_bag's bags (mode 0 sum, 1
    mean, 2 max) and the bookkeeping of PyTorch's CPU kernel, value for value (Note
    [embedding_bag's bookkeeping outputs])."""
    import pytorchlite as torch
    pad = _embedding_bag_checks(weight, indices, offsets, mode, per_sample_weights,
                                padding_idx)
    output = F.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                             mode=_BAG_MODES[mode], sparse=sparse,
                             per_sample_weights=per_sample_weights,
                             include_last_offset=include_last_offset, padding_idx=pad)
    itype = torch.int32 if indices.dtype == offsets.dtype == torch.int32 else torch.int64
    indices, offsets = indices.to(itype), offsets.to(itype)
    n, num_bags = indices.numel(), offsets.numel() - (1 if include_last_offset else 0)
    num_bags = max(num_bags, 0)
    # bag of each index: how many of the bags' starts lie at or before it, less one
    starts = offsets[:num_bags]
    counts = torch.zeros(n + 1, dtype=itype).index_add_(
        0, starts.clamp(max=n), torch.ones(num_bags, dtype=itype))
    offset2bag = counts.cumsum(0, dtype=itype)[:n] - 1
    fast_sum = mode == 0 and pad is None and weight.dtype in (
        torch.float32, torch.float16, torch.bfloat16) and weight.stride(1) == 1 and \
        (per_sample_weights is None or per_sample_weights.stride(0) == 1)
    if mode == 0:
        grad = weight.requires_grad or (per_sample_weights is not None and
                                        per_sample_weights.requires_grad)
        bag_size = torch.zeros(num_bags if grad else offsets.numel(), dtype=itype)
        empty = torch.zeros(0, dtype=itype)
        return output, empty if fast_sum else offset2bag, bag_size, bag_size.clone()
    ends = torch.cat([starts[1:], torch.tensor([n], dtype=itype)]) if num_bags else starts
    bag_size = ends - starts
    if pad is not None:
        padded = offset2bag[indices == pad].long()
        bag_size = bag_size - torch.bincount(padded, minlength=num_bags).to(itype)
    if mode == 1:
        return output, offset2bag, bag_size, bag_size.clone()
    return output, offset2bag, bag_size, _bag_argmax(weight, indices, offset2bag, num_bags, pad)


def _bag_argmax(weight, indices, offset2bag, num_bags, pad):
    """[bags, D]: per bag and column, the row of weight (an entry of indices, padding_idx's
    left out) holding the bag's first maximum; 0 for a bag without rows."""
    import pytorchlite as torch
    n, d = indices.numel(), weight.size(1)
    if n == 0:
        return torch.zeros(num_bags, d, dtype=indices.dtype)
    keep = torch.ones(n, dtype=torch.bool) if pad is None else indices != pad
    rows = weight.detach()[indices.long()].masked_fill(~keep.unsqueeze(1), float("-inf"))
    bags = offset2bag.long().unsqueeze(1).expand(n, d)
    best = torch.full((num_bags, d), float("-inf"), dtype=weight.dtype).scatter_reduce(
        0, bags, rows, "amax")
    at = (rows == best.gather(0, bags)) & keep.unsqueeze(1)
    pos = torch.where(at, torch.arange(n).unsqueeze(1), torch.full((), n))
    first = torch.full((num_bags, d), n).scatter_reduce(0, bags, pos, "amin")
    return torch.cat([indices, indices.new_zeros(1)])[first]


# ---- one step of the recurrent cells with explicit weights ----

@native
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """(h', c') from hx = (h, c)."""
    return _rnn._cell_function("LSTM", input, hx, w_ih, w_hh, b_ih, b_hh)


@native
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _rnn._cell_function("GRU", input, hx, w_ih, w_hh, b_ih, b_hh)


@native
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _rnn._cell_function("RNN_TANH", input, hx, w_ih, w_hh, b_ih, b_hh)


@native
def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _rnn._cell_function("RNN_RELU", input, hx, w_ih, w_hh, b_ih, b_hh)


# ---- the recurrent layers with explicit weights (torch._VF.lstm, what nn.LSTM calls) ----
# Note [Functional RNN checks]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ATen's checks, in its order and words: two LSTM states; the parameters in groups of w_ih,
# w_hh (b_ih, b_hh with has_biases; LSTM's w_hr where h and c differ in size); one state row
# and one group per layer and direction; dropout in [0, 1] when training; a sequence of at
# least one step.  Where ATen checks nothing and indexes out of range or past its buffers (an
# input or a state of the wrong rank or size; torch aborts on a state of the wrong batch),
# the nn modules' messages come out (nn.LSTM checks these before it calls torch._VF.lstm).

_RNN_PARAMETERS = ("has_biases", "num_layers", "dropout", "train", "bidirectional")


def _rnn_weights(mode, hx, params, has_biases, layers):
    """params in groups, one (w_ih, w_hh, b_ih, b_hh, w_hr) per layer and direction (absent
    ones None), after ATen's checks of the counts (layers: num_layers * num_directions)."""
    projections = mode == "LSTM" and hx[0].dim() == 3 and hx[0].size(2) != hx[1].size(2)
    stride = 2 + 2 * bool(has_biases) + projections
    if len(params) % stride:
        raise RuntimeError("got an incorrect number of RNN parameters")
    if hx[0].dim() == 0 or hx[0].size(0) != layers:
        raise RuntimeError("Expected more hidden states in stacked_rnn")
    if len(params) // stride != layers:
        raise RuntimeError("Expected more weights in stacked_rnn")
    weights = []
    for k in range(layers):
        group = list(params[k * stride:(k + 1) * stride])
        w_ih, w_hh = group[:2]
        b_ih, b_hh = group[2:4] if has_biases else (None, None)
        weights.append((w_ih, w_hh, b_ih, b_hh, group[-1] if projections else None))
    return weights


def _check_rnn_shapes(mode, input, batch, hx, weights, input_dim):
    """nn.RNNBase.check_forward_args's checks (Note [Functional RNN checks])."""
    if input.dim() != input_dim:
        raise RuntimeError(f"input must have {input_dim} dimensions, got {input.dim()}")
    w_ih, w_hh = weights[0][:2]
    if input.dtype != w_ih.dtype:
        raise RuntimeError("mat1 and mat2 must have the same dtype, but got "
                           f"{_SCALAR_NAMES[input.dtype]} and {_SCALAR_NAMES[w_ih.dtype]}")
    if input.size(-1) != w_ih.size(1):
        raise RuntimeError("input.size(-1) must be equal to input_size. Expected "
                           f"{w_ih.size(1)}, got {input.size(-1)}")
    sizes = [w_hh.size(1)] + ([w_hh.size(0) // 4] if mode == "LSTM" else [])
    for k, (h, size) in enumerate(zip(hx, sizes)):
        expected = (len(weights), batch, size)
        if tuple(h.shape) != expected:
            what = f"hidden[{k}]" if mode == "LSTM" else "hidden"
            raise RuntimeError(f"Expected {what} size {expected}, got {list(h.shape)}")


def _rnn_layers(mode, args, kwargs):
    """torch.lstm / gru / rnn_tanh / rnn_relu, both overloads: (input, hx, params, ...,
    batch_first) and the packed (data, batch_sizes, hx, params, ...); the layers run as
    nn.LSTM's do (nn/modules/rnn.py's _run_stack, the time loop aten::_ptl_rnn_layer)."""
    lstm = mode == "LSTM"
    packed = "data" in kwargs or "batch_sizes" in kwargs or (
        len(args) > 2 and isinstance(args[1] if lstm else args[2], Tensor))
    names = (("data", "batch_sizes", "hx", "params") + _RNN_PARAMETERS if packed else
             ("input", "hx", "params") + _RNN_PARAMETERS + ("batch_first",))
    a = dict(zip(names, args), **kwargs)
    input, params = a["data" if packed else "input"], a["params"]
    hx = tuple(a["hx"]) if lstm else (a["hx"],)
    if lstm and len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    directions = 2 if a["bidirectional"] else 1
    weights = _rnn_weights(mode, hx, params, a["has_biases"], a["num_layers"] * directions)
    dropout = a["dropout"] if a["train"] else 0.0
    if a["train"] and not 0 <= dropout <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout}")
    state = hx if lstm else hx[0]
    if packed:
        batch_sizes = a["batch_sizes"]
        batch = int(batch_sizes[0]) if batch_sizes.numel() else 0
        _check_rnn_shapes(mode, input, batch, hx, weights, 2)
        output, h_n = _rnn._run_packed(mode, input, batch_sizes, state, weights, directions,
                                       dropout)
    else:
        batch_first = a["batch_first"]
        _check_rnn_shapes(mode, input, input.size(0 if batch_first else 1) if
                          input.dim() == 3 else 0, hx, weights, 3)
        x = input.transpose(0, 1) if batch_first else input
        if x.size(0) == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        output, h_n = _rnn._run_stack(mode, x, state, weights, directions, dropout)
        if batch_first:
            output = output.transpose(0, 1)
    return (output,) + tuple(h_n) if lstm else (output, h_n)


@native
def lstm(*args, **kwargs):
    """(output, h_n, c_n) of the layers with weights params (Note [Functional RNN checks])."""
    return _rnn_layers("LSTM", args, kwargs)


@native
def gru(*args, **kwargs):
    return _rnn_layers("GRU", args, kwargs)


@native
def rnn_tanh(*args, **kwargs):
    return _rnn_layers("RNN_TANH", args, kwargs)


@native
def rnn_relu(*args, **kwargs):
    return _rnn_layers("RNN_RELU", args, kwargs)


def _prelu_method(self, weight):
    return prelu(self, weight)


def _install(tensor_class):
    """Tensor.prelu (the only one of these PyTorch has as a method): a method of its own, so
    that __torch_function__ (and a torch.fx trace) sees torch.prelu for the function."""
    _prelu_method.__name__ = "prelu"
    _prelu_method.__qualname__ = "Tensor.prelu"
    tensor_class.prelu = _prelu_method

# each public function goes to __torch_function__ first (Note [Torch function])
_overrides._route_functions(globals())


def _present_torch_names(torch):
    """nn.functional's functions that PyTorch binds as torch.<name> (F.relu_ is torch.relu_)
    reach __torch_function__ as torch.<name> (Note [The call __torch_function__ sees]);
    called by the package once its namespace is complete."""
    for name in F._C_TORCH:
        if getattr(F, name) is not getattr(torch, name):
            _overrides._present_as(getattr(F, name), getattr(torch, name))
