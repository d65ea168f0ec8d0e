"""Kernel benchmarks: vectorized exp/erf/sigmoid/tanh, pointwise ops on strided operands, gelu
forward+backward, softmax and log_softmax rows, amax over the last dim.  Each group runs
pytorchlite, NumPy (where it has the function) and PyTorch on the same float32 data, one
thread each.

    pytest benchmarks/test_bench_kernels.py --benchmark-enable -q
"""
import numpy as np
import pytest

import pytorchlite as ptl
from _impls import TORCH, lib, make, randn, torch


@pytest.fixture(autouse=True)
def one_thread():
    old = ptl.get_num_threads()
    ptl.set_num_threads(1)
    old_t = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(1)
    yield
    ptl.set_num_threads(old)
    if torch is not None:
        torch.set_num_threads(old_t)


def _np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _np_log_softmax(x):
    m = x - x.max(-1, keepdims=True)
    return m - np.log(np.exp(m).sum(-1, keepdims=True))


UNARY = {
    "exp": np.exp,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
}


# NumPy has no vectorized erf (nor gelu, which needs it): those groups have no numpy row
# (rather than a skipped one)
CASES = [(impl, op) for op in sorted(UNARY) + ["erf", "gelu"]
         for impl in ["pytorchlite"] + (["numpy"] if op in UNARY else []) + TORCH]


@pytest.mark.parametrize("impl, op", CASES)
def test_unary_1e6(benchmark, impl, op):
    benchmark.group = f"{op} 1e6 float32"
    x = make(impl, randn(10**6))
    if impl == "numpy":
        fn = UNARY[op]
    elif op == "gelu":
        fn = lib(impl).nn.functional.gelu
    else:
        fn = getattr(lib(impl), op)
    benchmark(fn, x)


STRIDED = {
    "stepped * 2": lambda x, y: x[:, ::2] * 2,
    "stepped exp": lambda x, y: x[:, ::2].exp() if hasattr(x, "exp") else np.exp(x[:, ::2]),
    "x + y.T": lambda x, y: x + y.T,
}


@pytest.mark.parametrize("impl", ["pytorchlite", "numpy"] + TORCH)
@pytest.mark.parametrize("op", list(STRIDED))
def test_strided_operands(benchmark, impl, op):
    """Operands that are neither contiguous nor broadcast (a stepped view of [512, 1024],
    a transposed [1000, 1000]: issue 16's 1e6): Note [Staged strided runs]."""
    benchmark.group = f"strided {op} float32"
    x = make(impl, randn((512, 1024) if op != "x + y.T" else (1000, 1000)))
    y = make(impl, randn((1000, 1000), seed=1))
    benchmark(STRIDED[op], x, y)


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_gelu_forward_backward(benchmark, impl):
    benchmark.group = "gelu fwd+bwd [16,64,512] float32"
    x = make(impl, randn((16, 64, 512)), requires_grad=True)
    F = lib(impl).nn.functional

    def step():
        x.grad = None
        F.gelu(x).sum().backward()
    benchmark(step)


@pytest.mark.parametrize("impl", ["pytorchlite", "numpy"] + TORCH)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_rows(benchmark, impl, op):
    benchmark.group = f"{op} 4096x1024 float32 dim -1"
    x = make(impl, randn((4096, 1024)))
    if impl == "numpy":
        fn = _np_softmax if op == "softmax" else _np_log_softmax
        benchmark(fn, x)
    else:
        benchmark(getattr(lib(impl), op), x, -1)


@pytest.mark.parametrize("impl", ["pytorchlite", "numpy"] + TORCH)
def test_amax_last(benchmark, impl):
    benchmark.group = "amax(-1) 4096x1024 float32"
    x = make(impl, randn((4096, 1024)))
    benchmark(lambda t: t.max(-1) if impl == "numpy" else t.amax(-1), x)


# ---- the GPT training step's per-op paths ----

@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_layer_norm_forward_backward(benchmark, impl):
    benchmark.group = "layer_norm fwd+bwd [16,64,128] float32"
    L = lib(impl)
    x = make(impl, randn((16, 64, 128))).requires_grad_(True)
    w, b = L.ones(128, requires_grad=True), L.zeros(128, requires_grad=True)
    benchmark(lambda: L.nn.functional.layer_norm(x, (128,), w, b).sum().backward())


@pytest.mark.parametrize("impl", ["pytorchlite", "composite"])
def test_layer_norm_fused_vs_composite(benchmark, impl):
    """The layer norm kernel (pytorchlite) against the same normalization written out in
    pytorchlite's ops (var_mean, subtraction, rsqrt, scale and shift: composite)."""
    benchmark.group = "layer_norm fwd+bwd [16,64,128] float32: kernel vs composite"
    F = ptl.nn.functional
    x = ptl.tensor(randn((16, 64, 128))).requires_grad_(True)
    w, b = ptl.ones(128, requires_grad=True), ptl.zeros(128, requires_grad=True)
    if impl == "pytorchlite":
        benchmark(lambda: F.layer_norm(x, (128,), w, b).sum().backward())
    else:
        def composite():
            var, mean = ptl.var_mean(x, [2], correction=0, keepdim=True)
            return ((x - mean) * (var + 1e-5).rsqrt() * w + b).sum().backward()
        benchmark(composite)


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_cross_entropy_forward_backward(benchmark, impl):
    benchmark.group = "cross_entropy fwd+bwd 1024x65 float32"
    L = lib(impl)
    x = make(impl, randn((1024, 65))).requires_grad_(True)
    y = L.tensor(np.random.default_rng(0).integers(0, 65, 1024))
    benchmark(lambda: L.nn.functional.cross_entropy(x, y).backward())


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_gelu_tanh_forward_backward(benchmark, impl):
    benchmark.group = "gelu tanh fwd+bwd [16,64,512] float32"
    x = make(impl, randn((16, 64, 512))).requires_grad_(True)
    benchmark(lambda: lib(impl).nn.functional.gelu(x, approximate="tanh").sum().backward())


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_sdpa_causal(benchmark, impl):
    benchmark.group = "scaled_dot_product_attention causal [16,4,64,32] float32"
    q = make(impl, randn((16, 4, 64, 32)))
    benchmark(lambda: lib(impl).nn.functional.scaled_dot_product_attention(q, q, q,
                                                                           is_causal=True))


@pytest.mark.parametrize("impl", ["pytorchlite"] + TORCH)
def test_embedding_forward_backward(benchmark, impl):
    benchmark.group = "embedding fwd+bwd 65x128, [16,64] indices float32"
    L = lib(impl)
    w = L.zeros(65, 128, requires_grad=True)
    idx = L.tensor(np.random.default_rng(0).integers(0, 65, (16, 64)))
    benchmark(lambda: L.nn.functional.embedding(idx, w).sum().backward())
