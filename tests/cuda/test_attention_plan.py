"""The fused attention kernels' plan and per-tile arithmetic (src/cuda/attention_plan.c and
attention_plan.h, compiled by gcc here and by nvcc for attention.cu), checked on the host:
with _C._cuda_kernel_emulation on, _scaled_dot_product_flash_attention_for_cpu and its
backward on CPU tensors go through the CUDA path (the CPU kernel's checks and casts, then
the kernels' stages in their grid, item, stage and thread order) and must reproduce NumPy in
float64: out, logsumexp, dq, dk, dv, under tunings whose tiles are 1 query by 2 keys (tiny),
8 by 16 (small) and 64 by 64 (device; head dim 256 in float64 halves them to fit shared
memory), grids of one block and many, causal or not, L != S both ways, head dims 1, 8, 64,
65, masks, strided heads, size 0 and the errors.  Needs no device and no nvcc."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from attention_ref import attention_ref, flash, flash_backward, run_flash
from kernel_emulation import TUNINGS, emulated

FLOATS = [ptl.float64, ptl.float32, ptl.float16, ptl.bfloat16]
# float16 and bfloat16 run in float32: the error is their inputs' and outputs' rounding,
# against a reference computed from the rounded inputs
TOL = {ptl.float64: 1e-12, ptl.float32: 2e-5, ptl.float16: 4e-3, ptl.bfloat16: 3e-2}


def rounded(a, dtype):
    return ptl.tensor(a).to(dtype).to(ptl.float64).numpy()


def check(got, want, dtype, what):
    for name, a, b in zip(("out", "logsumexp", "dq", "dk", "dv"), got, want):
        scale = max(np.abs(b[np.isfinite(b)]).max(initial=0.0), 1.0)
        np.testing.assert_allclose(a, b, rtol=0, atol=TOL[dtype] * scale,
                                   err_msg=f"{what}: {name}")


def case(rng, dtype, B, H, L, S, E, kind):
    """inputs rounded to dtype, a mask for kind "mask" (its row 0 wholly -inf)"""
    q, k, v = (rounded(rng.standard_normal((B, H, n, E)), dtype) for n in (L, S, S))
    g = rounded(rng.standard_normal((B, H, L, E)), dtype)
    mask = None
    if kind == "mask":
        mask = rounded(rng.standard_normal((L, S)), dtype)
        mask[rng.random((L, S)) < 0.3] = -np.inf
        mask[:1] = -np.inf
    return q, k, v, g, mask


# (B, H, L, S, E): L and S across every tuning's tiles (1/2, 8/16, 64/64), L != S both ways,
# one-row heads, head dims 1, 8, 64, 65
SHAPES = [(2, 3, 13, 11, 8), (1, 2, 1, 1, 1), (1, 1, 5, 17, 1), (2, 1, 70, 9, 65),
          (1, 2, 9, 70, 64), (1, 1, 64, 64, 8), (1, 1, 65, 129, 8)]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("kind", ["plain", "causal", "mask"])
def test_forward_and_backward_match_numpy(tuning, dtype, kind):
    rng = np.random.default_rng(0)
    with emulated(TUNINGS[tuning]) as ran:
        for shape in SHAPES:
            q, k, v, g, mask = case(rng, dtype, *shape, kind)
            scale = None if shape[-1] == 8 else 0.3
            got = run_flash(q, k, v, g, dtype, mask, kind == "causal", scale)
            want = attention_ref(q, k, v, g, mask, kind == "causal", scale)
            check(got, want, dtype, f"{shape} {kind}")
    # one forward and one backward a shape
    assert ran["attention"] == 2 * len(SHAPES)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("causal", [False, True])
def test_head_dim_256_in_float64_and_float32(tuning, causal):
    """the largest head dim: float64's tiles halve to fit the shared memory budget"""
    rng = np.random.default_rng(1)
    for dtype in (ptl.float64, ptl.float32):
        q, k, v, g, _ = case(rng, dtype, 1, 2, 21, 19, 256, "plain")
        with emulated(TUNINGS[tuning]):
            got = run_flash(q, k, v, g, dtype, None, causal)
        check(got, attention_ref(q, k, v, g, None, causal), dtype, f"{dtype} {causal}")


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_strided_heads_and_autograd_through_sdpa(tuning):
    """heads split from the features ([B, T, H, E] transposed) are read in place and the
    gradients land in the same layout, through F.scaled_dot_product_attention"""
    rng = np.random.default_rng(2)
    B, T, H, E = 2, 19, 3, 8
    x = [rng.standard_normal((B, T, H, E)) for _ in range(3)]
    g = rng.standard_normal((B, H, T, E))
    leaves = [ptl.tensor(a).requires_grad_(True) for a in x]
    with emulated(TUNINGS[tuning]) as ran:
        q, k, v = (t.transpose(1, 2) for t in leaves)
        assert not q.is_contiguous()
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.backward(ptl.tensor(g))
    assert ran["attention"] == 2
    qa, ka, va = (np.swapaxes(a, 1, 2) for a in x)
    want = attention_ref(qa, ka, va, g, None, True)
    np.testing.assert_allclose(out.detach().numpy(), want[0], atol=1e-12)
    for t, w in zip(leaves, want[2:]):
        np.testing.assert_allclose(t.grad.numpy(), np.swapaxes(w, 1, 2), atol=1e-12)


def test_results_repeat_bit_for_bit():
    rng = np.random.default_rng(3)
    q, k, v, g, _ = case(rng, ptl.float32, 2, 2, 37, 41, 16, "plain")
    with emulated(TUNINGS["small"]):
        first = run_flash(q, k, v, g, ptl.float32, None, True)
        again = run_flash(q, k, v, g, ptl.float32, None, True)
    for a, b in zip(first, again):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("shape", [(0, 2, 5, 6, 4), (1, 2, 0, 6, 4), (1, 2, 5, 0, 4)])
@pytest.mark.parametrize("causal", [False, True])
def test_size_zero(shape, causal):
    """no batch, no queries (dk, dv zero), no keys (out and dq zero, logsumexp +inf)"""
    rng = np.random.default_rng(4)
    q, k, v, g, _ = case(rng, ptl.float64, *shape, "plain")
    with emulated(TUNINGS["tiny"]):
        got = run_flash(q, k, v, g, ptl.float64, None, causal)
    want = attention_ref(q, k, v, g, None, causal)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_errors():
    z = ptl.zeros(1, 1, 3, 257)
    with emulated(TUNINGS["device"]):
        with pytest.raises(RuntimeError, match="FlashAttention forward only supports head "
                                               "dimension at most 256"):
            flash(z, z, z)
        lse = ptl.zeros(1, 1, 3)
        with pytest.raises(RuntimeError, match="FlashAttention backward only supports head "
                                               "dimension at most 256"):
            flash_backward(z, z, z, z, z, lse, 0.0, False)
        y = ptl.zeros(1, 1, 3, 4)
        with pytest.raises(RuntimeError, match="Currently do not support dropout > 0"):
            flash(y, y, y, 0.1)
        with pytest.raises(RuntimeError, match="Q/K/V should have the same head size"):
            flash(y, y, z)
