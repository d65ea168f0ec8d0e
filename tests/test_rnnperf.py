"""The fast recurrent path (rnnperf): nn.RNN / LSTM / GRU against torch in float64 on
sequences longer than autograd's 64-input limit, packed input, every option, and the fused
cell ops with their derivative formulas (gradcheck / gradgradcheck)."""
import numpy as np
import pytest

import pytorchlite as ptl
from test_nn_seq import _build, _close, _ptl, _torch, check_module, randn

torch = pytest.importorskip("torch")


# ---- modules against torch ----

@pytest.mark.parametrize("name,kwargs", [
    ("RNN", {"num_layers": 2}),
    ("RNN", {"nonlinearity": "relu", "bidirectional": True}),
    ("LSTM", {"bidirectional": True, "proj_size": 2}),
    ("LSTM", {"num_layers": 2, "batch_first": True}),
    ("GRU", {"bidirectional": True, "bias": False}),
])
def test_long_sequence_matches_torch(name, kwargs):
    """70 steps: more outputs than one autograd node records inputs (stack in groups)."""
    ours, theirs = _build(name, (3, 4), kwargs)
    x = randn(2, 70, 3) if kwargs.get("batch_first") else randn(70, 2, 3)
    check_module(ours, theirs, [x])


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_given_state_and_noncontiguous_input(name):
    ours, theirs = _build(name, (3, 4), {"num_layers": 2, "bidirectional": True})
    x = randn(2, 3, 6, seed=1).transpose(2, 0, 1)          # [6, 2, 3], not contiguous
    h = randn(4, 2, 4, seed=2)
    if name == "LSTM":
        check_module(ours, theirs, [x], {"hx": (h, randn(4, 2, 4, seed=3))})
    else:
        check_module(ours, theirs, [x, h])


@pytest.mark.parametrize("name,kwargs", [
    ("RNN", {"nonlinearity": "relu"}),
    ("LSTM", {"proj_size": 2, "bidirectional": True}),
    ("GRU", {"num_layers": 2}),
])
def test_packed_long_sequences(name, kwargs):
    ours, theirs = _build(name, (3, 4), kwargs)
    lengths = [5, 70, 1, 33]
    x = randn(70, 4, 3, seed=4)
    tx, px = _torch(x, True), _ptl(x, True)
    a = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, enforce_sorted=False)
    b = ptl.nn.utils.rnn.pack_padded_sequence(px, ptl.tensor(lengths), enforce_sorted=False)
    tout, pout = theirs(a), ours(b)
    tflat = [tout[0].data] + list(tout[1] if name == "LSTM" else [tout[1]])
    pflat = [pout[0].data] + list(pout[1] if name == "LSTM" else [pout[1]])
    w = [randn(*t.shape, seed=5 + k) for k, t in enumerate(tflat)]
    sum((t * _torch(wk)).sum() for t, wk in zip(tflat, w)).backward()
    sum((p * _ptl(wk)).sum() for p, wk in zip(pflat, w)).backward()
    for k, (p, t) in enumerate(zip(pflat, tflat)):
        _close(p, t, f"output {k}")
    _close(px.grad, tx.grad, "grad of the padded input")
    tparams = dict(theirs.named_parameters())
    for pname, p in ours.named_parameters():
        _close(p.grad, tparams[pname].grad, pname)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_dropout_between_layers_seeded(name):
    """Dropout between layers draws from the seeded generator: one seed, one result; the
    last layer's output is not dropped (no zero rows at dropout 0.5 on 2 layers)."""
    ours = getattr(ptl.nn, name)(3, 4, num_layers=2, dropout=0.5, dtype=ptl.float64)
    ours.train()
    x = _ptl(randn(5, 2, 3), True)
    ptl.manual_seed(3)
    a = ours(x)[0]
    ptl.manual_seed(3)
    b = ours(x)[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    c = ours(x)[0]
    assert not np.array_equal(a.detach().numpy(), c.detach().numpy())
    a.sum().backward()
    assert x.grad is not None and np.isfinite(x.grad.numpy()).all()


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_empty_batch_and_float32(name):
    ours, theirs = _build(name, (3, 4), {})
    check_module(ours, theirs, [randn(4, 0, 3)])
    m32 = getattr(ptl.nn, name)(3, 4)
    out = m32(ptl.tensor(randn(6, 2, 3).astype(np.float32)))[0]
    assert out.dtype == ptl.float32 and tuple(out.shape) == (6, 2, 4)
