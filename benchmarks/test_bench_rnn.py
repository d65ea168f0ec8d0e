"""Recurrent layer benchmarks: nn.LSTM / GRU / RNN forward and forward + backward next to
PyTorch with the same weights and input (NumPy has no such layers)."""
import numpy as np
import pytest

import pytorchlite as ptl

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
