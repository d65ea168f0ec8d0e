"""The fused attention kernels (src/cuda/attention.cu; Note [CUDA flash attention] in
attention_plan.h), reached through _scaled_dot_product_flash_attention_for_cpu on CUDA
tensors and F.scaled_dot_product_attention, against the CPU kernel: out, logsumexp and the
gradients dq, dk, dv in every float dtype, causal or not, with a mask, L != S, head dims 1
to 256, heads split from the features (strided), size 0, and results that repeat bit for
bit.  Each test skips, with the reason the device is missing, on a machine without a GPU;
tools/gpu_check.sh runs them on one, with PTL_REQUIRE_GPU=1 turning a skip into a
failure."""

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite import _C
from device_required import pytestmark, require_device  # noqa: F401


aten = ptl.ops.aten
flash = aten._scaled_dot_product_flash_attention_for_cpu
flash_backward = aten._scaled_dot_product_flash_attention_for_cpu_backward

FLOATS = [ptl.float32, ptl.float64, ptl.float16, ptl.bfloat16]
# both sides sum in float32 (float64) in different orders, the device with fma
TOL = {ptl.float32: 2e-5, ptl.float64: 1e-12, ptl.float16: 4e-3, ptl.bfloat16: 3e-2}


def check(dev, cpu, what):
    assert dev.device.type == "cuda" and dev.dtype == cpu.dtype and dev.shape == cpu.shape
    a, b = dev.cpu().to(ptl.float64).numpy(), cpu.to(ptl.float64).numpy()
    scale = max(np.abs(b[np.isfinite(b)]).max(initial=0.0), 1.0)
    np.testing.assert_allclose(a, b, rtol=0, atol=TOL[cpu.dtype] * scale, err_msg=what)


def both(fn, *cpu_args):
    """fn on the CPU tensors and on their device copies (None stays None)"""
    dev_args = [None if a is None else a.cuda() for a in cpu_args]
    return fn(*cpu_args), fn(*dev_args)


# (B, H, L, S, E): partial and many tiles, L != S both ways, head dims 1 to 256
SHAPES = [(2, 3, 13, 11, 8), (1, 2, 1, 1, 1), (2, 1, 70, 9, 65), (1, 2, 9, 130, 64),
          (2, 4, 257, 257, 64), (1, 2, 33, 47, 128), (1, 1, 40, 40, 256), (0, 2, 5, 6, 8),
          (1, 2, 0, 6, 8), (1, 2, 5, 0, 8)]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("kind", ["plain", "causal", "mask"])
def test_flash_and_its_backward_match_the_cpu(dtype, kind):
    rng = np.random.default_rng(0)
    for B, H, L, S, E in SHAPES:
        q, k, v = (ptl.tensor(rng.standard_normal((B, H, n, E))).to(dtype) for n in (L, S, S))
        g = ptl.tensor(rng.standard_normal((B, H, L, E))).to(dtype)
        mask = None
        if kind == "mask":
            m = rng.standard_normal((L, S))
            m[rng.random((L, S)) < 0.3] = -np.inf
            mask = ptl.tensor(m).to(dtype)
        causal = kind == "causal"
        what = f"{(B, H, L, S, E)} {kind}"
        (oc, lc), (od, ld) = both(lambda q, k, v, m: flash(q, k, v, 0.0, causal, attn_mask=m),
                                  q, k, v, mask)
        check(od, oc, what + " out")
        check(ld, lc, what + " logsumexp")
        gc, gd = both(lambda *a: flash_backward(*a[:6], 0.0, causal, attn_mask=a[6]),
                      g, q, k, v, oc, lc, mask)
        for name, a, b in zip(("dq", "dk", "dv"), gd, gc):
            check(a, b, f"{what} {name}")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_sdpa_on_strided_heads_with_autograd(dtype):
    """[B, T, H, E] transposed to [B, H, T, E] (the heads strided) through F.sdpa and
    backward; the device path is the fused kernel"""
    rng = np.random.default_rng(1)
    B, T, H, E = 3, 77, 4, 32
    xs = [ptl.tensor(rng.standard_normal((B, T, H, E))).to(dtype) for _ in range(3)]
    g = ptl.tensor(rng.standard_normal((B, H, T, E))).to(dtype)
    leaves_c = [x.detach().requires_grad_(True) for x in xs]
    leaves_d = [x.detach().cuda().requires_grad_(True) for x in xs]
    for leaves, gg in ((leaves_c, g), (leaves_d, g.cuda())):
        out = F.scaled_dot_product_attention(*(t.transpose(1, 2) for t in leaves),
                                             is_causal=True, scale=0.2)
        out.backward(gg)
        leaves.append(out.detach())
    check(leaves_d[3], leaves_c[3], "out")
    for i in range(3):
        check(leaves_d[i].grad, leaves_c[i].grad, f"grad {i}")


def test_results_repeat_bit_for_bit():
    rng = np.random.default_rng(2)
    q, k, v, g = (ptl.tensor(rng.standard_normal((2, 4, 300, 64))).float().cuda()
                  for _ in range(4))
    runs = []
    for _ in range(2):
        out, lse = flash(q, k, v, 0.0, True)
        runs.append([out, lse] + list(flash_backward(g, q, k, v, out, lse, 0.0, True)))
    for a, b in zip(*runs):
        assert np.array_equal(a.cpu().numpy(), b.cpu().numpy())


def test_head_dim_over_256():
    """the fused kernel refuses it as PyTorch's flash kernel does; F.sdpa takes the
    composite instead"""
    q = ptl.randn(1, 1, 3, 257).cuda()
    with pytest.raises(RuntimeError, match="FlashAttention forward only supports head "
                                           "dimension at most 256"):
        flash(q, q, q)
    out = F.scaled_dot_product_attention(q, q, q)
    check(out, F.scaled_dot_product_attention(q.cpu(), q.cpu(), q.cpu()), "composite")
