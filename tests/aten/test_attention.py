"""_scaled_dot_product_flash_attention_for_cpu and its backward (src/aten/native/attention.c)
against NumPy float64 references at and across the query and key block sizes (32 and 64),
on 1 and 2 threads; its derivative (gradcheck, gradgradcheck through the create_graph
formulas); F.scaled_dot_product_attention's fused path against its composite; and the
errors."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck, gradgradcheck
from attention_ref import attention_ref, probs_ref, run_flash, scores_ref
from helpers import assert_raises_like_torch, rerun_with_capability, torch

aten = ptl.ops.aten
flash = aten._scaled_dot_product_flash_attention_for_cpu
flash_backward = aten._scaled_dot_product_flash_attention_for_cpu_backward

# float32 sums run over at most max(E, SDPA_BK) terms of size about 1 (scores, then
# probabilities times values): a few float32 ulps of the largest term each
TOL = {ptl.float32: 2e-5, ptl.float64: 1e-12}


def with_threads(n, fn):
    old = ptl.get_num_threads()
    try:
        ptl.set_num_threads(n)
        return fn()
    finally:
        ptl.set_num_threads(old)


def check(got, want, dtype, what):
    names = ("out", "logsumexp", "dq", "dk", "dv")
    for name, a, b in zip(names, got, want):
        scale = max(np.abs(b[np.isfinite(b)]).max(initial=0.0), 1.0)
        np.testing.assert_allclose(a, b, rtol=0, atol=TOL[dtype] * scale,
                                   err_msg=f"{what}: {name}")


# every L and S at, below and above the block sizes (32 queries, 64 keys), L != S, S = 1
BLOCK_SIZES = [(1, 1), (5, 7), (31, 33), (32, 64), (33, 65), (64, 63), (65, 1), (97, 130),
               (130, 97)]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("L,S", BLOCK_SIZES)
@pytest.mark.parametrize("kind", ["plain", "causal", "mask"])
def test_flash_matches_numpy_across_blocks_and_threads(dtype, L, S, kind):
    gen = np.random.default_rng(L * 1000 + S)
    E = 8 if L * S > 4000 else 20
    q, k, v = (gen.standard_normal(shape) for shape in [(2, 3, L, E), (2, 3, S, E),
                                                        (2, 3, S, E)])
    g = gen.standard_normal((2, 3, L, E))
    mask = None
    if kind == "mask":
        mask = gen.standard_normal((3, L, S))
        mask[gen.random((3, L, S)) < 0.3] = -np.inf
        mask[:, L // 2] = -np.inf          # a fully masked row gives zeros
        mask = mask[None]
    want = attention_ref(q, k, v, g, mask, kind == "causal", 0.3)
    results = [with_threads(n, lambda: run_flash(q, k, v, g, dtype, mask, kind == "causal",
                                                 0.3)) for n in (1, 2)]
    check(results[0], want, dtype, f"L={L} S={S} {kind}")
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b, err_msg="1 vs 2 threads")


# The causal band (Note [Flash attention on the CPU]): row tiles of 4, column chunks of 16
# (8 for float64), scores padded to vectors of 8, keys packed by 8 x 8 transposes; every L
# and S around those and the block sizes, head sizes around the vector width.
BAND_SIZES = [(1, 3), (4, 4), (7, 9), (16, 17), (31, 32), (33, 33), (64, 64), (65, 70),
              (100, 129)]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("E", [1, 8, 32, 33, 64])
@pytest.mark.parametrize("L,S", BAND_SIZES)
@pytest.mark.parametrize("layout", ["contiguous", "split"])
def test_flash_causal_band_across_tiles_and_head_sizes(dtype, E, L, S, layout):
    gen = np.random.default_rng(L * 100 + S + E)
    B, H = 2, 2
    if layout == "split":     # heads split from one projection [B, T, 3 H E]
        x = gen.standard_normal((B, max(L, S), 3 * H * E))
        q, k, v = (a.reshape(B, -1, H, E).transpose(0, 2, 1, 3) for a in np.split(x, 3, -1))
        q, k, v = q[:, :, :L], k[:, :, :S], v[:, :, :S]
    else:
        q, k, v = (gen.standard_normal((B, H, n, E)) for n in (L, S, S))
    g = gen.standard_normal((B, H, L, E))
    want = attention_ref(q, k, v, g, causal=True)

    def run():
        if layout == "split":
            xt = ptl.tensor(x, dtype=dtype)
            qt, kt, vt = (t.view(B, -1, H, E).transpose(1, 2) for t in xt.chunk(3, -1))
            qt, kt, vt = qt[:, :, :L], kt[:, :, :S], vt[:, :, :S]
            assert not qt.is_contiguous()
        else:
            qt, kt, vt = (ptl.tensor(a, dtype=dtype) for a in (q, k, v))
        out, lse = flash(qt, kt, vt, 0.0, True)
        grads = flash_backward(ptl.tensor(g, dtype=dtype), qt, kt, vt, out, lse, 0.0, True)
        return [t.numpy().astype(np.float64) for t in (out, lse) + tuple(grads)]

    results = [with_threads(n, run) for n in (1, 2)]
    check(results[0], want, dtype, f"L={L} S={S} E={E} {layout}")
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b, err_msg="1 vs 2 threads")


@pytest.mark.parametrize("shape", [(0, 2, 3, 4, 4), (1, 1, 0, 5, 4), (1, 2, 3, 0, 4),
                                   (1, 1, 3, 2, 0)])
def test_flash_size_zero(shape):
    B, H, L, S, E = shape
    q = ptl.randn(B, H, L, E, requires_grad=True)
    k = ptl.randn(B, H, S, E, requires_grad=True)
    v = ptl.randn(B, H, S, E, requires_grad=True)
    out, lse = flash(q, k, v)
    assert tuple(out.shape) == (B, H, L, E) and tuple(lse.shape) == (B, H, L)
    np.testing.assert_array_equal(out.detach().numpy(), np.zeros((B, H, L, E)))
    if S == 0:        # no key at all: zeros, and +inf (Note [Flash attention on the CPU])
        assert np.all(lse.detach().numpy() == np.inf)
    out.sum().backward()
    for t in (q, k, v):
        assert t.grad.shape == t.shape and not np.any(t.grad.numpy())


@pytest.mark.parametrize("L,S", [(33, 130), (0, 70), (40, 0), (64, 64)])
def test_flash_gradient_rows_no_block_reaches_are_zeros(L, S):
    """dQ's rows are first written by key block 0 and dK's and dV's by the first query block
    that sees them (Note [Flash attention on the CPU]); the rows none reaches (a causal key
    past every query, or no query or key at all) must still come back zero, not as the
    memory's old contents: the freed NaN tensors beforehand leave garbage to find."""
    gen = np.random.default_rng(L + S)
    B, H, E = 2, 2, 8
    q, k, v = (gen.standard_normal((B, H, n, E)) for n in (L, S, S))
    g = gen.standard_normal((B, H, L, E))
    want = attention_ref(q, k, v, g, causal=True)
    for _ in range(3):
        junk = [ptl.full((B, H, n, E), float("nan")) for n in (L, S, S, L, S, S)]
        del junk
        got = run_flash(q, k, v, g, ptl.float32, causal=True)
        check(got, want, ptl.float32, f"L={L} S={S}")
        for dk_rows in (got[3][:, :, L:], got[4][:, :, L:]):
            assert not np.any(dk_rows), "the keys past every query have zero gradients"


def test_flash_portable_loops():
    """the float32 rows' fused AVX2 loops and the portable ones they stand in for, rerun
    with the vector loops capped at the baseline"""
    rerun_with_capability(__file__, "default", "-k",
                          "matches_numpy or causal_band or size_zero or no_block_reaches")


def test_flash_float16_and_bfloat16_run_in_float32():
    gen = np.random.default_rng(3)
    q, k, v = (gen.standard_normal((1, 2, 5, 4)) for _ in range(3))
    for dt in (ptl.float16, ptl.bfloat16):
        out, lse = flash(*(ptl.tensor(a, dtype=dt) for a in (q, k, v)))
        assert out.dtype == dt and lse.dtype == dt
        want = probs_ref(scores_ref(*(ptl.tensor(a, dtype=dt).double().numpy()
                                      for a in (q, k)))) @ ptl.tensor(v, dtype=dt).double().numpy()
        np.testing.assert_allclose(out.double().numpy(), want, atol=2e-2)


def test_flash_strided_inputs_and_output_layout():
    """heads split from the features ([B, L, H, E] transposed), as nn.MultiheadAttention and
    GPT blocks make them; the output (and gradients) come back in that layout"""
    gen = np.random.default_rng(4)
    B, L, H, E = 2, 37, 3, 8
    x = gen.standard_normal((B, L, 3 * H * E))
    xt = ptl.tensor(x, requires_grad=True)
    q, k, v = (t.view(B, L, H, E).transpose(1, 2) for t in xt.chunk(3, -1))
    out, _ = flash(q, k, v, 0.0, True)
    assert out.transpose(1, 2).is_contiguous()
    g = gen.standard_normal((B, H, L, E))
    out.backward(ptl.tensor(g))
    qa, ka, va = (a.reshape(B, L, H, E).transpose(0, 2, 1, 3) for a in np.split(x, 3, -1))
    want = attention_ref(qa, ka, va, g, causal=True)
    np.testing.assert_allclose(out.detach().numpy(), want[0], atol=1e-12)
    grad = np.concatenate([w.transpose(0, 2, 1, 3).reshape(B, L, H * E) for w in want[2:]], -1)
    np.testing.assert_allclose(xt.grad.numpy(), grad, atol=1e-12)


@pytest.mark.parametrize("kind", ["plain", "causal", "mask", "lse"])
def test_flash_gradcheck_and_gradgradcheck(kind):
    gen = np.random.default_rng(5)
    q, k, v = (ptl.tensor(gen.standard_normal(s), requires_grad=True)
               for s in [(1, 2, 4, 3), (1, 2, 5, 3), (1, 2, 5, 3)])
    mask = None
    if kind == "mask":
        m = gen.standard_normal((4, 5))
        m[1] = -np.inf
        m[2, :2] = -np.inf
        mask = ptl.tensor(m)

    def f(q, k, v):
        out, lse = flash(q, k, v, 0.0, kind == "causal", attn_mask=mask)
        # "lse": the logsumexp output's gradient takes the formulas' path
        return (out, lse) if kind == "lse" else out
    assert gradcheck(f, (q, k, v))
    assert gradgradcheck(f, (q, k, v))


def test_flash_backward_node_and_saved_values():
    q = ptl.randn(1, 1, 3, 2, requires_grad=True)
    out, lse = flash(q, q, q)
    assert type(out.grad_fn).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"
    out.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.sum().backward()


# ---- F.scaled_dot_product_attention: the fused path against the composite ----

def composite(monkeypatch, *args, **kwargs):
    with monkeypatch.context() as m:
        m.setattr(F, "_sdpa_fusable", lambda *a: False)
        return F.scaled_dot_product_attention(*args, **kwargs)


def sdpa_cases():
    gen = np.random.default_rng(6)
    bool_mask = gen.random((5, 7)) < 0.6
    bool_mask[2] = False
    float_mask = np.where(gen.random((3, 1, 7)) < 0.3, -np.inf, gen.standard_normal((3, 1, 7)))
    return [
        ("rank 4 causal L<S", (2, 3, 5, 4), (2, 3, 7, 4), dict(is_causal=True)),
        ("rank 4 causal L>S", (2, 3, 9, 4), (2, 3, 4, 4), dict(is_causal=True)),
        ("rank 3 bool mask", (3, 5, 4), (3, 7, 4), dict(attn_mask=bool_mask)),
        ("rank 2 scale", (5, 4), (7, 4), dict(scale=0.7)),
        ("rank 4 float mask broadcast", (2, 3, 5, 4), (2, 3, 7, 4),
         dict(attn_mask=float_mask)),
        ("gqa", (1, 4, 5, 4), (1, 2, 7, 4), dict(enable_gqa=True)),
    ]


@pytest.mark.parametrize("name,qs,ks,kw", sdpa_cases(), ids=lambda c: c if isinstance(c, str)
                         else None)
def test_sdpa_fused_matches_composite(monkeypatch, name, qs, ks, kw):
    gen = np.random.default_rng(7)
    arrays = [gen.standard_normal(s) for s in (qs, ks, ks)]
    g = gen.standard_normal(qs)
    results = []
    for fn in (lambda *a, **k: F.scaled_dot_product_attention(*a, **k),
               lambda *a, **k: composite(monkeypatch, *a, **k)):
        q, k, v = (ptl.tensor(a, requires_grad=True) for a in arrays)
        kwargs = dict(kw)
        if "attn_mask" in kwargs:
            kwargs["attn_mask"] = ptl.tensor(kwargs["attn_mask"])
        out = fn(q, k, v, **kwargs)
        out.backward(ptl.tensor(g))
        results.append([out.detach().numpy(), q.grad.numpy(), k.grad.numpy(),
                        v.grad.numpy()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, atol=1e-12, err_msg=name)


def test_sdpa_takes_the_fused_path_only_where_it_applies():
    q = ptl.randn(2, 3, 4, 5, requires_grad=True)
    node = lambda **kw: type(F.scaled_dot_product_attention(q, q, q, **kw).grad_fn).__name__
    assert node() == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert node(is_causal=True) == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert node(dropout_p=0.5) != "ScaledDotProductFlashAttentionForCpuBackward0"
    mask = ptl.zeros(4, 4, requires_grad=True)
    assert node(attn_mask=mask) != "ScaledDotProductFlashAttentionForCpuBackward0"
    k = ptl.randn(1, 3, 4, 5)      # broadcast batch dims: the composite
    out = F.scaled_dot_product_attention(q, k, k)
    assert type(out.grad_fn).__name__ != "ScaledDotProductFlashAttentionForCpuBackward0"


@pytest.mark.parametrize("kw", [dict(is_causal=True), dict(attn_mask="bool"), {}])
def test_sdpa_gradgradcheck_through_the_fused_path(kw):
    gen = np.random.default_rng(8)
    q, k, v = (ptl.tensor(gen.standard_normal(s), requires_grad=True)
               for s in [(2, 3, 2), (2, 4, 2), (2, 4, 2)])
    if kw.get("attn_mask") == "bool":
        m = gen.random((3, 4)) < 0.6
        m[0] = False
        kw = dict(attn_mask=ptl.tensor(m))
    f = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kw)
    assert gradcheck(f, (q, k, v))
    assert gradgradcheck(f, (q, k, v))


@pytest.mark.torch_ref
@pytest.mark.parametrize("causal", [False, True])
def test_flash_matches_torch(causal):
    gen = np.random.default_rng(9)
    arrays = [gen.standard_normal(s).astype(np.float32) for s in
              [(2, 3, 40, 16), (2, 3, 70, 16), (2, 3, 70, 16), (2, 3, 40, 16)]]
    mask = gen.standard_normal((40, 70)).astype(np.float32)
    got, want = [], []
    for lib, out_list in ((ptl, got), (torch, want)):
        q, k, v = (lib.tensor(a, requires_grad=True) for a in arrays[:3])
        m = None if causal else lib.tensor(mask)
        out, lse = lib.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q, k, v, 0.0, causal, attn_mask=m)
        out.backward(lib.tensor(arrays[3]))
        out_list += [t.detach().numpy() for t in (out, lse, q.grad, k.grad, v.grad)]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


# ---- errors ----

def _r(*shape):
    return lambda lib: lib.zeros(*shape)


@pytest.mark.parametrize("call,msg", [
    (lambda L: L.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        L.zeros(1, 1, 3, 4), L.zeros(1, 1, 3, 4), L.zeros(1, 1, 3, 4), 0.5),
     "Currently do not support dropout > 0"),
    (lambda L: L.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        L.zeros(1, 3, 4), L.zeros(1, 3, 4), L.zeros(1, 3, 4)),
     "Accept only 4 dims inputs shape of {B, H, T, K}"),
    (lambda L: L.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        L.zeros(1, 1, 3, 4), L.zeros(1, 1, 3, 4, dtype=L.float64), L.zeros(1, 1, 3, 4)),
     "expected scalar type Float but found Double"),
    (lambda L: L.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        *[L.zeros(1, 1, 3, 4, dtype=L.long)] * 3),
     "Expected data type in FP32, FP64, BF16, FP16, but got Long instead."),
    (lambda L: L.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        L.zeros(1, 1, 3, 4), L.zeros(1, 1, 3, 4), L.zeros(1, 1, 3, 5)),
     "Q/K/V should have the same head size"),
    (lambda L: L.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        *[L.zeros(1, 1, 3, 4)] * 3, attn_mask=L.zeros(3, 3, dtype=L.bool)),
     "Attention mask is the same data type as query"),
    (lambda L: L.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        *[L.zeros(1, 1, 3, 4)] * 3, attn_mask=L.zeros(3)),
     "Attention mask dim in {2, 4}"),
    (lambda L: L.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        *[L.zeros(1, 1, 3, 4)] * 3, attn_mask=L.zeros(3, 4)),
     "The expanded size of the tensor (3) must match the existing size (4) at non-singleton "
     "dimension 3.  Target sizes: [1, 1, 3, 3].  Tensor sizes: [1, 1, 3, 4]"),
], ids=["dropout", "dims", "dtype", "int", "head size", "mask dtype", "mask dim",
        "mask shape"])
def test_flash_errors_like_torch(call, msg):
    assert_raises_like_torch(call, RuntimeError, msg)


def test_flash_errors_torch_lacks():
    """shapes PyTorch's kernel reads out of bounds (or divides by zero) on"""
    z = ptl.zeros
    with pytest.raises(RuntimeError, match=r"expected query \[B, H, L, E\], key \[B, H, S, E\] "
                       r"and value \[B, H, S, E\], but got query \[1, 1, 3, 4\], key "
                       r"\[1, 1, 3, 4\] and value \[1, 1, 5, 4\]"):
        flash(z(1, 1, 3, 4), z(1, 1, 3, 4), z(1, 1, 5, 4))
    with pytest.raises(RuntimeError, match="expected query"):
        flash(z(2, 1, 3, 4), z(1, 1, 3, 4), z(1, 1, 3, 4))
    q = z(1, 1, 3, 4)
    out, lse = flash(q, q, q)
    with pytest.raises(RuntimeError, match=r"expected grad_out and out of size \[1, 1, 3, 4\] "
                       r"and dtype float32, but got \[1, 1, 2, 4\]"):
        flash_backward(z(1, 1, 2, 4), q, q, q, out, lse, 0.0, False)
    with pytest.raises(RuntimeError, match=r"expected logsumexp of size \[1, 1, 3\], but got "
                       r"\[1, 1, 4\]"):
        flash_backward(out, q, q, q, out, z(1, 1, 4), 0.0, False)
    with pytest.raises(RuntimeError, match="Currently do not support dropout > 0"):
        flash_backward(out, q, q, q, out, lse, 0.1, False)
