"""Recurrent layer benchmarks: nn.LSTM / GRU / RNN forward and forward + backward next to
PyTorch with the same weights and input (NumPy has no such layers), and a training step of
an LSTM language model (embedding, 1 or 2 LSTM layers, linear head, cross-entropy,
backward, Adam) on one thread each and on two.

    pytest benchmarks/test_bench_rnn.py --benchmark-enable -q
"""
import math

import numpy as np
import pytest

import pytorchlite as ptl
from _impls import both_on_one_thread

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

IMPLS = ["pytorchlite", "torch"]
INPUT, HIDDEN, BATCH = 64, 128, 32


def library(impl):
    if impl == "torch" and torch is None:
        pytest.skip("PyTorch is not installed: no reference to compare with")
    return ptl if impl == "pytorchlite" else torch


def build(impl, cls, num_layers, seq, batch=BATCH):
    """(lib, module, input) with weights and input equal across libraries."""
    lib = library(impl)
    rng = np.random.default_rng(0)
    module = getattr(lib.nn, cls)(INPUT, HIDDEN, num_layers)
    with lib.no_grad():
        for p in module.parameters():
            p.copy_(lib.tensor(rng.uniform(-0.1, 0.1, tuple(p.shape)).astype(np.float32)))
    x = lib.tensor(rng.standard_normal((seq, batch, INPUT)).astype(np.float32))
    return lib, module, x


def forward(lib, module, x):
    with lib.no_grad():
        return module(x)[0]


def forward_backward(module, x):
    out = module(x)[0]
    out.sum().backward()
    return out


CASES = [("LSTM", 1, 50), ("LSTM", 2, 50), ("LSTM", 1, 200), ("GRU", 1, 50),
         ("RNN", 1, 50)]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("cls,layers,seq", CASES)
def test_rnn_forward(benchmark, impl, cls, layers, seq):
    benchmark.group = f"{cls} {layers} layer(s) seq {seq} b{BATCH} {INPUT}->{HIDDEN} fwd"
    lib, module, x = build(impl, cls, layers, seq)
    out = benchmark(forward, lib, module, x)
    assert tuple(out.shape) == (seq, BATCH, HIDDEN)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("cls,layers,seq", CASES)
def test_rnn_forward_backward(benchmark, impl, cls, layers, seq):
    benchmark.group = f"{cls} {layers} layer(s) seq {seq} b{BATCH} {INPUT}->{HIDDEN} fwd+bwd"
    lib, module, x = build(impl, cls, layers, seq)
    out = benchmark(forward_backward, module, x)
    assert tuple(out.shape) == (seq, BATCH, HIDDEN)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("grad", [False, True])
def test_functional_lstm(benchmark, impl, grad):
    """torch.lstm (torch._VF.lstm) with the module's weights as a list: 2 layers, seq 50."""
    benchmark.group = f"torch.lstm 2 layers seq 50 b{BATCH} {INPUT}->{HIDDEN} " + (
        "fwd+bwd" if grad else "fwd")
    lib, module, x = build(impl, "LSTM", 2, 50)
    params = [p.detach().requires_grad_(grad) for p in module._flat_weights]
    h = lib.zeros(2, BATCH, HIDDEN)

    def run():
        out = lib.lstm(x, [h, h], params, True, 2, 0.0, False, False, False)[0]
        if grad:
            out.sum().backward()
        return out
    out = benchmark(run)
    assert tuple(out.shape) == (50, BATCH, HIDDEN)


@pytest.mark.parametrize("impl", IMPLS)
def test_lstm_packed(benchmark, impl):
    benchmark.group = f"LSTM packed seq <= 50 b{BATCH} {INPUT}->{HIDDEN} fwd+bwd"
    lib, module, x = build(impl, "LSTM", 1, 50)
    lengths = lib.tensor(np.random.default_rng(1).integers(1, 51, BATCH).tolist())
    packed = lib.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)

    def run():
        out = module(packed)[0]
        out.data.sum().backward()
        return out

    out = benchmark(run)
    assert out.data.shape[1] == HIDDEN


@pytest.mark.parametrize("impl", ["pytorchlite", "composite"])
@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_cell_fused_vs_composite(benchmark, impl, cls):
    """One cell step forward + backward at the layers' sizes: the fused kernel (pytorchlite)
    against the composite of ops that defines it (nn/modules/rnn.py)."""
    from pytorchlite.nn.modules import rnn
    benchmark.group = f"{cls} cell b{BATCH} h{HIDDEN} fwd+bwd: fused kernel vs composite"
    fused = impl == "pytorchlite"
    if cls == "LSTM":
        cell = rnn._fused_lstm_cell if fused else rnn._lstm_cell_ops
    else:
        cell = rnn._fused_gru_cell if fused else rnn._gru_cell_ops
    rng = np.random.default_rng(0)
    gates = (4 if cls == "LSTM" else 3) * HIDDEN
    args = [ptl.tensor(rng.standard_normal(shape).astype(np.float32)).requires_grad_()
            for shape in ((BATCH, gates), (BATCH, gates), (BATCH, HIDDEN), (gates,), (gates,))]

    def run():
        out = cell(*args)
        (out[0] if cls == "LSTM" else out).sum().backward()
    benchmark(run)


# ---- an LSTM language model's training step ----

VOCAB, EMBED, LM_HIDDEN, LM_BATCH, LM_SEQ = 65, 64, 128, 16, 64


@pytest.fixture
def one_thread():
    """Both libraries on one thread for the test."""
    with both_on_one_thread():
        yield


def lm_step(impl, layers):
    """One training step of embedding -> LSTM (layers) -> linear -> cross-entropy -> Adam on
    [T = 64, B = 16] tokens, the same weights and data in either library."""
    lib = library(impl)
    nn = lib.nn

    class LanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, EMBED)
            self.lstm = nn.LSTM(EMBED, LM_HIDDEN, layers)
            self.head = nn.Linear(LM_HIDDEN, VOCAB)

        def forward(self, tokens):
            return self.head(self.lstm(self.embed(tokens))[0])

    model = LanguageModel()
    rng = np.random.default_rng(0)
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.uniform(-0.1, 0.1, tuple(p.shape)).astype(np.float32)))
    g = np.random.default_rng(1)
    x = lib.tensor(g.integers(0, VOCAB, (LM_SEQ, LM_BATCH)))
    y = lib.tensor(g.integers(0, VOCAB, (LM_SEQ * LM_BATCH,)))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x).reshape(-1, VOCAB), y)
        loss.backward()
        opt.step()
        return loss
    return step


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("layers", [1, 2])
def test_lstm_language_model_step(benchmark, one_thread, impl, layers):
    benchmark.group = (f"train step LSTM LM {layers} layer(s) e{EMBED} h{LM_HIDDEN} "
                       f"seq {LM_SEQ} b{LM_BATCH} Adam, 1 thread")
    step = lm_step(impl, layers)
    loss = benchmark.pedantic(step, rounds=5, iterations=1, warmup_rounds=1)
    assert math.isfinite(loss.item())


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("layers", [1, 2])
def test_lstm_language_model_step_two_threads(benchmark, impl, layers):
    """The same step with both libraries on two intra-op threads (the recurrent layer's rows
    cut between them: Note [Recurrent layer threads] in src/aten/native/rnn.c)."""
    benchmark.group = (f"train step LSTM LM {layers} layer(s) e{EMBED} h{LM_HIDDEN} "
                       f"seq {LM_SEQ} b{LM_BATCH} Adam, 2 threads")
    lib = library(impl)
    old = lib.get_num_threads()
    lib.set_num_threads(2)
    try:
        step = lm_step(impl, layers)
        loss = benchmark.pedantic(step, rounds=5, iterations=1, warmup_rounds=1)
    finally:
        lib.set_num_threads(old)
    assert math.isfinite(loss.item())


@pytest.mark.parametrize("layers", [1, 2])
def test_lstm_language_model_same_first_losses(layers):
    """Both libraries run the same computation: equal losses over the first steps."""
    library("torch")
    ours, ref = lm_step("pytorchlite", layers), lm_step("torch", layers)
    for _ in range(3):
        a, b = ours().item(), ref().item()
        assert abs(a - b) <= 1e-4 * max(1.0, abs(b)), (a, b)
