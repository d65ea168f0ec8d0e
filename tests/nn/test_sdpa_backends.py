"""nn.attention: SDPBackend, sdpa_kernel and the torch.backends.cuda sdp switches, and what
F.scaled_dot_product_attention does under each allowed set, against NumPy float64 and torch."""
import math
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from helpers import torch, torch_ref

SDPBackend = ptl.nn.attention.SDPBackend
sdpa_kernel = ptl.nn.attention.sdpa_kernel
NONE_VIABLE = ("No viable backend for scaled_dot_product_attention was found. This is likely "
               "due to turning off both the math kernel and the fused kernels.")


def _ref(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    e = np.exp(s - s.max(-1, keepdims=True, initial=-np.inf))
    return (e / e.sum(-1, keepdims=True)) @ v


def _flags():
    c = ptl.backends.cuda
    return (c.math_sdp_enabled(), c.flash_sdp_enabled(), c.mem_efficient_sdp_enabled(),
            c.cudnn_sdp_enabled())


def test_backend_enum():
    assert [(b.name, int(b)) for b in SDPBackend] == [
        ("ERROR", -1), ("MATH", 0), ("FLASH_ATTENTION", 1), ("EFFICIENT_ATTENTION", 2),
        ("CUDNN_ATTENTION", 3), ("OVERRIDEABLE", 4)]
    assert repr(SDPBackend.MATH) == "<SDPBackend.MATH: 0>"
    assert str(SDPBackend.FLASH_ATTENTION) == "SDPBackend.FLASH_ATTENTION"


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (3, 5, 4), (0, 2, 3, 4), (1, 1, 0, 4),
                                   (2, 0, 4)])
@pytest.mark.parametrize("allowed", [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION,
                                     [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]])
def test_allowed_backends_compute_attention(shape, allowed):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(shape) for _ in range(3))
    k = np.ascontiguousarray(np.swapaxes(k, -1, -2)).swapaxes(-1, -2)  # non-contiguous key
    before = _flags()
    with sdpa_kernel(allowed) as ctx:
        assert ctx == {}
        if allowed == SDPBackend.FLASH_ATTENTION and len(shape) != 4 and 0 not in shape:
            with pytest.warns(UserWarning) as seen:
                with pytest.raises(RuntimeError, match="^No available kernel.  Aborting "
                                                       "execution.$"):
                    F.scaled_dot_product_attention(*map(ptl.from_numpy, (q, k, v)))
            assert [str(w.message) for w in seen] == [
                "Flash attention kernel not used because:",
                "All fused kernels requires query, key and value to be 4 dimensional, but got "
                "Query dim: 3, Key dim: 3, Value dim: 3 instead."]
            return
        out = F.scaled_dot_product_attention(*map(ptl.from_numpy, (q, k, v)))
    assert _flags() == before == (True, True, True, True)
    np.testing.assert_allclose(out.numpy(), _ref(q, k, v), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("allowed", [[], SDPBackend.EFFICIENT_ATTENTION, SDPBackend.ERROR,
                                     [SDPBackend.CUDNN_ATTENTION, SDPBackend.OVERRIDEABLE]])
def test_no_cpu_backend_raises(allowed):
    q = ptl.randn(1, 2, 3, 4)
    with sdpa_kernel(allowed):
        with pytest.raises(RuntimeError, match="^" + NONE_VIABLE + "$"):
            F.scaled_dot_product_attention(q, q, q)
        # PyTorch answers an empty input before it looks at the switches
        assert F.scaled_dot_product_attention(q[:0], q[:0], q[:0]).shape == (0, 2, 3, 4)
    F.scaled_dot_product_attention(q, q, q)


def test_flash_refusals_and_switches():
    q, v5 = ptl.randn(1, 2, 3, 4), ptl.randn(1, 2, 3, 5)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for args, reason in [((q, q, v5), "same last dimension"),
                             ((q, q, q, None, 0.5), "do not support non-zero dropout")]:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                with pytest.raises(RuntimeError, match="No available kernel"):
                    F.scaled_dot_product_attention(*args)
            assert reason in str(seen[-1].message)
    ptl.backends.cuda.enable_math_sdp(False)
    try:
        assert not ptl.backends.cuda.math_sdp_enabled()
        with pytest.raises(RuntimeError, match="No available kernel"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                F.scaled_dot_product_attention(q, q, v5)
    finally:
        ptl.backends.cuda.enable_math_sdp(True)
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend or a "
                                             "list of SDPBackend instances, got str"):
        with sdpa_kernel("math"):
            pass


def test_restored_after_an_exception():
    with pytest.raises(ValueError):
        with sdpa_kernel([SDPBackend.MATH], set_priority=True):
            raise ValueError
    assert _flags() == (True, True, True, True)


@torch_ref
@pytest.mark.parametrize("case", ["3d", "dropout", "headdim", "4d", "empty", "empty3d"])
@pytest.mark.parametrize("allowed", ["MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "none"])
def test_outcome_matches_torch(case, allowed):
    shapes = {"3d": [(2, 3, 4)] * 3, "dropout": [(1, 2, 3, 4)] * 3,
              "headdim": [(1, 2, 3, 4), (1, 2, 3, 4), (1, 2, 3, 5)],
              "4d": [(1, 2, 3, 4)] * 3, "empty": [(1, 2, 0, 4)] * 3,
              "empty3d": [(2, 3, 4), (2, 0, 4), (2, 0, 4)]}[case]
    outcome = {}
    for lib in (ptl, torch):
        nn_att = lib.nn.attention
        chosen = [] if allowed == "none" else getattr(nn_att.SDPBackend, allowed)
        args = [lib.zeros(s, dtype=lib.float64) for s in shapes]
        with nn_att.sdpa_kernel(chosen), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out = lib.nn.functional.scaled_dot_product_attention(
                    *args, dropout_p=0.5 if case == "dropout" else 0.0)
                outcome[lib] = ("ok", tuple(out.shape))
            except RuntimeError as e:
                outcome[lib] = ("error", str(e).split(" (Triggered")[0])
    assert outcome[ptl] == outcome[torch]
