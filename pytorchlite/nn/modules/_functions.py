"""The autograd Functions behind nn modules that are not one operator (mirrors
torch/nn/modules/_functions.py): SyncBatchNorm's batch statistics and gradient sums, reduced
across the ranks of a process group, and CrossMapLRN2d.

Note [Synchronized batch norm]
Every rank normalises its shard with the statistics of the whole global batch, so N ranks of
B samples each compute what one process would on N*B samples.  Forward: each rank's
per-channel count, mean and sum of squared deviations (M2) are all-gathered and merged as
parallel variances merge (Chan et al.): mean = sum(n_r mean_r) / n,
M2 = sum(M2_r + n_r (mean_r - mean)^2): no E[x^2] - E[x]^2 cancellation.  Backward: the input
gradient needs the global sums of dy and dy * (x - mean) (one all_reduce of both); weight and
bias gradients stay per rank (their sum over ranks is DDP's all-reduce, as in PyTorch).  Every
rank must run forward and backward together: a rank that skips one leaves the others waiting
in the collective."""
from ... import _C
from ...autograd.function import Function


def _channel_dims(x):
    return [0] + list(range(2, x.dim()))


def _per_channel(t, x):
    """t [C] shaped to broadcast against x [N, C, ...]."""
    return t.reshape([1, -1] + [1] * (x.dim() - 2))


class SyncBatchNormFunction(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, group,
                world_size):
        from ... import distributed as dist
        fn = _C._functions
        channels = input.shape[1]
        count = input.numel() // channels
        dims = _channel_dims(input)
        if count > 0:
            local_mean = input.mean(dims)
            local_m2 = (input - _per_channel(local_mean, input)).square().sum(dims)
        else:
            local_mean = local_m2 = fn["zeros"](channels, dtype=input.dtype)
        stats = fn["cat"]([local_mean, local_m2, fn["full"]((1,), count, dtype=input.dtype)])
        gathered = fn["empty"]((world_size, stats.numel()), dtype=input.dtype)
        dist.all_gather_into_tensor(gathered, stats, group=group)
        means, m2s = gathered[:, :channels], gathered[:, channels:2 * channels]
        counts = gathered[:, 2 * channels:]
        total = int(counts.sum().item())
        if total <= 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {input.size()}")
        mean = (means * counts).sum(0) / total
        m2 = m2s.sum(0) + (counts * (means - mean).square()).sum(0)
        invstd = (m2 / total + eps).rsqrt()
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean, alpha=momentum)
        if running_var is not None:
            running_var.mul_(1 - momentum).add_(m2 / (total - 1), alpha=momentum)
        xhat = (input - _per_channel(mean, input)) * _per_channel(invstd, input)
        out = xhat
        if weight is not None:
            out = out * _per_channel(weight, input)
        if bias is not None:
            out = out + _per_channel(bias, input)
        ctx.save_for_backward(input, weight, mean, invstd)
        ctx.group, ctx.total = group, total
        return out

    @staticmethod
    def backward(ctx, grad_output):
        from ... import distributed as dist
        input, weight, mean, invstd = ctx.saved_tensors
        dims = _channel_dims(input)
        centred = input - _per_channel(mean, input)
        sum_dy = grad_output.sum(dims)
        sum_dy_xmu = (grad_output * centred).sum(dims)
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[1]:
            grad_weight = sum_dy_xmu * invstd
        if ctx.needs_input_grad[2]:
            grad_bias = sum_dy
        if ctx.needs_input_grad[0]:
            both = _C._functions["cat"]([sum_dy, sum_dy_xmu])
            dist.all_reduce(both, group=ctx.group)
            channels = sum_dy.numel()
            mean_dy = both[:channels] / ctx.total
            mean_dy_xmu = both[channels:] / ctx.total
            scale = invstd if weight is None else invstd * weight
            grad_input = (grad_output - _per_channel(mean_dy, input)
                          - centred * _per_channel(invstd.square() * mean_dy_xmu, input)) \
                * _per_channel(scale, input)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None


def _channel_sum(x, mask):
    """y[:, c] = sum over j of mask[c, j] * x[:, j] for x [N, C, H, W]."""
    return (x.permute(0, 2, 3, 1) @ mask.t()).permute(0, 3, 1, 2)


def _channel_mask(x, first, last, with_first_channel):
    """[C, C] mask (x's dtype) of channels c + first <= j <= c + last (and j = 0 when
    with_first_channel)"""
    n = x.shape[1]
    c = _C._functions["arange"](n, device=x.device).reshape(n, 1)
    j = _C._functions["arange"](n, device=x.device).reshape(1, n)
    m = (j >= c + first) & (j <= c + last)
    if with_first_channel:
        m = m | ((j == 0) & (j <= c + last))
    return m.to(x.dtype)


class CrossMapLRN2d(Function):
    """Local response normalisation across channels of a 4-D input (the legacy Lua layer):
    output = input * scale^-beta, scale = k + alpha / size * (sum of input^2 over a channel
    window).  PyTorch's forward keeps a running window sum that never drops channel 0, so
    channel c's window is c - pre_pad + 1 .. c + pre_pad - 1 (pre_pad = int((size - 1) / 2
    + 1)) plus channel 0; its hand-written backward sums grad * output / scale over
    c - ipp .. c - ipp + size - 1 (ipp = int(size - (size - 1) / 2)).  Both are reproduced
    as they are, so gradients equal PyTorch's rather than the forward's exact derivative."""

    @staticmethod
    def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             "instead.")
        ctx.size, ctx.alpha, ctx.beta, ctx.k = size, alpha, beta, k
        pre_pad = int((size - 1) / 2 + 1)
        mask = _channel_mask(input, 1 - pre_pad, pre_pad - 1, True)
        scale = _channel_sum(input * input, mask) * (alpha / size) + k
        output = scale.pow(-beta) * input
        ctx.save_for_backward(input, output, scale)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output, scale = ctx.saved_tensors
        size = ctx.size
        ipp = int(size - (size - 1) / 2)
        mask = _channel_mask(input, -ipp, size - 1 - ipp, False)
        accum = _channel_sum(grad_output * output / scale, mask)
        grad = scale.pow(-ctx.beta) * grad_output
        grad = grad - (2 * ctx.alpha * ctx.beta / size) * input * accum
        return grad, None, None, None, None
