"""NumPy float64 references of the fused attention and a runner of its operators, shared by
the CPU kernel's tests (tests/aten/test_attention.py) and the CUDA kernels' plan tests
(tests/cuda/test_attention_plan.py)."""
import math

import numpy as np

import pytorchlite as ptl

aten = ptl.ops.aten
flash = aten._scaled_dot_product_flash_attention_for_cpu
flash_backward = aten._scaled_dot_product_flash_attention_for_cpu_backward


def scores_ref(q, k, mask=None, causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    return s if mask is None else s + mask


def probs_ref(s):
    """softmax over the last dim; a row with no finite score gives zeros"""
    m = s.max(-1, keepdims=True) if s.shape[-1] else np.full(s.shape[:-1] + (1,), -np.inf)
    live = np.isfinite(m)
    e = np.exp(s - np.where(live, m, 0))
    return np.where(live, e / np.where(live, e.sum(-1, keepdims=True), 1), 0)


def attention_ref(q, k, v, g, mask=None, causal=False, scale=None):
    """(out, logsumexp, dq, dk, dv) in float64 for the output gradient g"""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = scores_ref(q, k, mask, causal, scale)
    p = probs_ref(s)
    out = p @ v
    with np.errstate(divide="ignore", invalid="ignore"):
        lse = np.log(np.exp(s - s.max(-1, keepdims=True)).sum(-1)) + s.max(-1) \
            if s.shape[-1] else np.full(s.shape[:-1], np.inf)
    lse = np.where(np.isfinite(lse), lse, np.inf)
    dp = g @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) * scale
    return out, lse, ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ g


def run_flash(q, k, v, g, dtype, mask=None, causal=False, scale=None):
    """forward and fused backward of the op: numpy arrays (out, lse, dq, dk, dv)"""
    qt, kt, vt, gt = (ptl.tensor(a, dtype=dtype) for a in (q, k, v, g))
    mt = None if mask is None else ptl.tensor(mask, dtype=dtype)
    out, lse = flash(qt, kt, vt, 0.0, causal, attn_mask=mt, scale=scale)
    grads = flash_backward(gt, qt, kt, vt, out, lse, 0.0, causal, attn_mask=mt, scale=scale)
    return [t.to(ptl.float64).numpy() for t in (out, lse) + tuple(grads)]
