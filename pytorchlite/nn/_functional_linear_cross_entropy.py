"""F.linear_cross_entropy: cross entropy of linear(input, linear_weight, linear_bias), and
its chunked path (torch/nn/functional.py and torch/nn/modules/linear_cross_entropy.py,
written afresh).

Note [Chunked linear cross entropy]
With options=None it is the reference, cross_entropy(linear(...)), and all of autograd works
through it.  With a LinearCrossEntropyOptions it walks the batch batch_chunk_size rows at a
time, so the [N, C] logits (an LLM head's vocabulary is C ~ 1e5) are never held whole: for a
chunk X [B, F] with targets t, per-row weights w (the class weight of t, 0 where t is
ignore_index),
    Z = X W^T + b          [B, C] in acc_dtype,  m = max_j Z,  s = sum_j exp(Z - m)
    loss_i = w_i (log s_i - (Z - m)_{i,t_i})
    G = c (softmax(Z) - onehot(t))   with c_i = w_i / sum(w) (mean), w_i (sum),
                                      w_i * grad_output_i (none, in backward)
    dX = G W,  dW += G^T X,  db += sum_i G_i
The mean and sum reductions compute the gradients in forward (one pass over W) and backward
scales them by the upstream gradient; with allow_retain_graph=False that consumes them, so a
second backward raises, as in PyTorch.  reduction="none" keeps its inputs and recomputes the
chunks in backward.  Higher-order gradients go through the reference path only.
dW += G^T X is dW.addmm_(G^T, X): the GEMM accumulates into dW itself, its beta source (Note
[Products written in place] in src/aten/native/linalg.c), with no [C, F] temporary."""
import math
import warnings

import pytorchlite as torch
from pytorchlite.autograd import Function

__all__ = ["linear_cross_entropy"]

_TWICE = ("linear_cross_entropy chunked backward called twice; retain_graph=True / double "
          "backward are not supported.")


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...); options (a
    nn.LinearCrossEntropyOptions) picks the chunked path (Note [Chunked linear cross
    entropy])."""
    from pytorchlite.nn.functional import cross_entropy, linear
    _check_shapes(input, linear_weight, linear_bias)
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    logits_shape = (*input.shape[:-1], num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if options is not None:
        chunkable = not out_features and reduction in ("mean", "sum", "none") \
            and label_smoothing == 0.0 and target.dtype == torch.int64
        if chunkable:
            return _chunked(input, linear_weight, target, linear_bias, weight, reduction,
                            ignore_index, options)
        bias_shape = None if linear_bias is None else tuple(linear_bias.shape)
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
            "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, "
            f"out_features == (). Got reduction={reduction!r}, "
            f"label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
            f"out_features={out_features}, tracing=False, linear_bias.shape={bias_shape}.",
            stacklevel=2)
    if out_features:
        rows = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape(rows, input.shape[-1])
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(rows)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=ignore_index, label_smoothing=label_smoothing)


def _check_shapes(input, linear_weight, linear_bias):
    """PyTorch's checks and messages, before either path."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError("expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), got "
            f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    bias_shape = tuple(linear_weight.shape[:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != bias_shape:
        raise RuntimeError(f"expected linear_bias shape {bias_shape}, got "
                           f"{tuple(linear_bias.shape)}")
    if linear_weight.dim() > 2 and input.dim() == 1:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {input.shape[-1]}), got unbatched input with shape "
            f"{tuple(input.shape)}")


def _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
             options):
    batched = input.dim() == 2
    if not batched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    options = options._adjust(num_batches=input.shape[0], in_features=input.shape[1],
                              num_classes=linear_weight.shape[0], dtype=input.dtype,
                              device=input.device)
    plan = (ignore_index, options.batch_chunk_size, options.acc_dtype)
    if reduction == "none":
        loss = _ChunkedNoReduction.apply(input, linear_weight, linear_bias, target, weight,
                                         plan)
    else:
        loss = _ChunkedReduction.apply(input, linear_weight, linear_bias, target, weight,
                                       plan, reduction, options.allow_retain_graph,
                                       torch.is_grad_enabled())
    return loss if batched else loss.squeeze(0)


def _row_weights(target, weight, ignore_index, dtype):
    """(w, t): w [N] the class weight of each target (1 without weight), 0 where the target
    is ignore_index; t the targets with ignore_index replaced by 0 (a valid column)."""
    keep = target != ignore_index
    t = torch.where(keep, target, torch.zeros_like(target))
    w = keep.to(dtype) if weight is None else \
        torch.where(keep, weight.to(dtype).index_select(0, t), torch.zeros((), dtype=dtype))
    return w, t


def _chunks(input, linear_weight, linear_bias, t, plan):
    """(rows, logits shifted by their row max, softmax denominators) per chunk of rows, all
    in acc_dtype.  logits is [B, C] for the chunk's B rows."""
    _, chunk, acc = plan
    w_acc = linear_weight.detach().to(acc)
    b_acc = None if linear_bias is None else linear_bias.detach().to(acc)
    x = input.detach()
    for start in range(0, x.shape[0], chunk):
        rows = slice(start, min(start + chunk, x.shape[0]))
        xc = x[rows].to(acc)
        z = torch.mm(xc, w_acc.t()) if b_acc is None else torch.addmm(b_acc, xc, w_acc.t())
        z.sub_(z.amax(1, keepdim=True))
        zt = z.gather(1, t[rows].unsqueeze(1)).squeeze(1)
        yield rows, xc, z, zt, z.exp_().sum(1)


def _forward_and_grads(input, linear_weight, linear_bias, target, weight, plan, coef_of,
                       needs):
    """(per-row loss [N] in acc_dtype, dX, dW, db): one pass over the chunks.  coef_of(w) is
    c of Note [Chunked linear cross entropy] (None: no gradients); needs says which of
    dX, dW, db to make."""
    ignore_index, _, acc = plan
    w, t = _row_weights(target, weight, ignore_index, acc)
    coef = None if coef_of is None else coef_of(w)
    losses = torch.empty(input.shape[0], dtype=acc)
    dx = torch.empty(input.shape, dtype=acc) if coef is not None and needs[0] else None
    dw = torch.zeros(linear_weight.shape, dtype=acc) if coef is not None and needs[1] else None
    db = torch.zeros(linear_weight.shape[0], dtype=acc) \
        if coef is not None and needs[2] else None
    for rows, xc, p, zt, s in _chunks(input, linear_weight, linear_bias, t, plan):
        losses[rows] = (s.log() - zt) * w[rows]
        if coef is None:
            continue
        # p holds exp(Z - m); G = c softmax - c onehot(t)
        p.mul_((coef[rows] / s).unsqueeze(1))
        p.scatter_add_(1, t[rows].unsqueeze(1), -coef[rows].unsqueeze(1))
        if dx is not None:
            dx[rows] = torch.mm(p, linear_weight.detach().to(acc))
        if dw is not None:
            dw.addmm_(p.t(), xc)
        if db is not None:
            db.add_(p.sum(0))
    return losses, dx, dw, db


def _needs(ctx, linear_bias):
    return (ctx.needs_input_grad[0], ctx.needs_input_grad[1],
            linear_bias is not None and ctx.needs_input_grad[2])


class _ChunkedReduction(Function):
    """mean / sum: the loss and its gradients in one pass; backward scales them."""

    @staticmethod
    def forward(ctx, input, linear_weight, linear_bias, target, weight, plan, reduction,
                allow_retain_graph, grad_enabled):
        # apply runs forward under no_grad: whether to make gradients is decided outside
        needs = _needs(ctx, linear_bias)
        grads = any(needs) and grad_enabled

        def coef_of(w):
            if reduction == "sum":
                return w
            total = w.sum()
            return w / torch.where(total == 0, torch.full_like(total, math.nan), total)

        losses, *g = _forward_and_grads(input, linear_weight, linear_bias, target, weight,
                                        plan, coef_of if grads else None, needs)
        ctx.grads = [None if x is None else x.to(input.dtype) for x in g]
        ctx.keep = allow_retain_graph
        loss = losses.sum()
        if reduction == "mean":
            loss = loss / _row_weights(target, weight, plan[0], plan[2])[0].sum()
        return loss.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        if ctx.grads is None:
            raise RuntimeError(_TWICE)
        grads = ctx.grads
        if not ctx.keep:
            ctx.grads = None
        out = [None if g is None else g * grad_output for g in grads]
        return out[0], out[1], out[2], None, None, None, None, None, None


class _ChunkedNoReduction(Function):
    """none: the per-row losses; backward recomputes the chunks with grad_output folded in."""

    @staticmethod
    def forward(ctx, input, linear_weight, linear_bias, target, weight, plan):
        ctx.save_for_backward(input, linear_weight, linear_bias, target, weight)
        ctx.plan = plan
        losses = _forward_and_grads(input, linear_weight, linear_bias, target, weight, plan,
                                    None, (False, False, False))[0]
        return losses.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        input, linear_weight, linear_bias, target, weight = ctx.saved_tensors
        acc = ctx.plan[2]
        _, dx, dw, db = _forward_and_grads(
            input, linear_weight, linear_bias, target, weight, ctx.plan,
            lambda w: w * grad_output.to(acc), _needs(ctx, linear_bias))
        out = [None if g is None else g.to(input.dtype) for g in (dx, dw, db)]
        return out[0], out[1], out[2], None, None, None
