"""multi_head_attention_forward and its mask helpers (torch/nn/functional.py), composed of
differentiable ops.  Star-imported by nn.functional."""
import math
import warnings

import pytorchlite as torch
from pytorchlite import overrides as _overrides

__all__ = ["multi_head_attention_forward"]


def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, torch.Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask becomes an additive float mask (-inf where True); float masks pass."""
    if mask is None:
        return None
    is_float = mask.is_floating_point()
    if mask.dtype != torch.bool and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. "
                      "Use same type for both instead.", stacklevel=2)
    if not is_float:
        mask = torch.where(mask, -math.inf, 0.0).to(target_type)
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """True for batched (3-D) query, False for unbatched (2-D); torch's messages otherwise."""
    n = query.dim()
    if n not in (2, 3):
        raise AssertionError("query should be unbatched 2D or batched 3D tensor but received "
                             f"{n}-D query tensor")
    kind = "For batched (3-D) `query`" if n == 3 else "For unbatched (2-D) `query`"
    if key.dim() != n or value.dim() != n:
        raise AssertionError(f"{kind}, expected `key` and `value` to be {n}-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != n - 1:
        raise AssertionError(f"{kind}, expected `key_padding_mask` to be `None` or {n - 1}-D "
                             f"but found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None and attn_mask.dim() not in (2, 3):
        raise AssertionError(f"{kind}, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                             f"{attn_mask.dim()}-D tensor instead")
    if n == 2 and attn_mask is not None and attn_mask.dim() == 3:
        expected = (num_heads, query.shape[0], key.shape[0])
        if tuple(attn_mask.shape) != expected:
            raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                 f"{attn_mask.shape}")
    return n == 3


def _pad_last(mask):
    """One more (zero) column at the end of the last dim: the added key takes part."""
    return torch.cat([mask, mask.new_zeros(tuple(mask.shape[:-1]) + (1,))], -1)


def _in_projection(query, key, value, w_q, w_k, w_v, b_q, b_k, b_v):
    F = torch.nn.functional
    return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """query [L, N, E], key [S, N, Ek], value [S, N, Ev] (or unbatched [L, E] ...) ->
    (output [L, N, E], weights [N, L, S] (per head: [N, H, L, S]) or None)."""
    F = torch.nn.functional
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        # scaled_dot_product_attention builds the causal mask itself
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            name = ("q" if q_proj_weight is None else "k" if k_proj_weight is None else "v")
            raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is "
                                 "None")
        b_q = b_k = b_v = None
        if in_proj_bias is not None:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight,
                                 b_q, b_k, b_v)
    else:
        if key.shape != value.shape:
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        w_q, w_k, w_v = in_proj_weight.chunk(3)
        b_q = b_k = b_v = None
        if in_proj_bias is not None:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, w_q, w_k, w_v, b_q, b_k, b_v)
    src_len = key.shape[0]
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = torch.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = torch.cat([v, bias_v.expand(1, bsz, embed_dim)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")
    # heads: [L, N, E] -> [N*H, L, E/H]
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, bsz, num_heads, head_dim, "k")
    v = _heads(v, static_v, bsz, num_heads, head_dim, "v")
    if add_zero_attn:
        zeros = k.new_zeros((bsz * num_heads, 1, head_dim))
        k = torch.cat([k, zeros], 1)
        v = torch.cat([v, zeros], 1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.size(1)
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = (key_padding_mask.reshape(bsz, 1, 1, src_len)
                            .expand(bsz, num_heads, 1, src_len)
                            .reshape(bsz * num_heads, 1, src_len))
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        if attn_mask is not None:
            weights = torch.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            weights = torch.bmm(q_scaled, k.transpose(-2, -1))
        weights = F.softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, p=dropout_p)
        out = torch.bmm(weights, v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _heads(t, static, bsz, num_heads, head_dim, name):
    """[S, N, E] -> [N*H, S, E/H], or the given static_k / static_v after a shape check."""
    if static is None:
        return t.reshape(t.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if static.size(0) != bsz * num_heads:
        raise AssertionError(f"expecting static_{name}.size(0) of {bsz * num_heads}, but got "
                             f"{static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting static_{name}.size(2) of {head_dim}, but got "
                             f"{static.size(2)}")
    return static

# each public function goes to __torch_function__ first (Note [Torch function])
_overrides._route_functions(globals())
