"""torch.lstm / gru / rnn_tanh / rnn_relu, the functional layers nn.LSTM / GRU / RNN call
(torch._VF): both overloads (input, batch_first) and (packed data, batch_sizes), against a
NumPy float64 loop, against nn's modules with the same weights, against PyTorch's outputs
(tests/golden.py), float64 gradcheck, and ATen's errors (Note [Functional RNN checks] in
pytorchlite/_nn_ops.py)."""
import numpy as np
import pytest

import golden
import pytorchlite as ptl
from helpers import torch

FUNCTIONS = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}
GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _np_step(mode, x, h, c, w):
    """One step in float64: x [B, I], h [B, H] (c: LSTM's cell) -> (h', c')."""
    w_ih, w_hh, b_ih, b_hh, w_hr = w
    b_ih = 0 if b_ih is None else b_ih
    b_hh = 0 if b_hh is None else b_hh
    gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    if mode == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        return (h if w_hr is None else h @ w_hr.T), c
    if mode == "GRU":
        (xr, xz, xn), (hr, hz, hn) = np.split(gi, 3, axis=1), np.split(gh, 3, axis=1)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        n = np.tanh(xn + r * hn)
        return (1 - z) * n + z * h, None
    act = np.tanh if mode == "RNN_TANH" else (lambda v: np.maximum(v, 0))
    return act(gi + gh), None


def _np_layers(mode, x, h0, c0, weights, directions, lengths=None):
    """x [T, B, I] -> (output [T, B, D*H], h_n, c_n); lengths: per sequence (packed input),
    a sequence's state stops at its last step (reverse: starts there)."""
    T, B = x.shape[:2]
    lengths = [T] * B if lengths is None else lengths
    hs, cs = [], []
    for layer in range(len(weights) // directions):
        outs = []
        for d in range(directions):
            k = layer * directions + d
            h, c = h0[k], (None if c0 is None else c0[k])
            out = np.zeros((T, B, h.shape[1]))
            for t in (range(T - 1, -1, -1) if d == 1 else range(T)):
                nh, nc = _np_step(mode, x[t], h, c, weights[k])
                live = np.array([t < n for n in lengths])[:, None]
                h = np.where(live, nh, h)
                c = None if c is None else np.where(live, nc, c)
                out[t] = np.where(live, h, 0)
            outs.append(out)
            hs.append(h)
            cs.append(c)
        x = np.concatenate(outs, 2)
    return x, np.stack(hs), (None if c0 is None else np.stack(cs))


def _weights(mode, gen, input_size, hidden, layers, directions, bias, proj=0):
    """Per layer and direction (w_ih, w_hh, b_ih, b_hh, w_hr) float64 arrays."""
    g = GATES[mode] * hidden
    out_size = proj or hidden
    weights = []
    for layer in range(layers):
        width = input_size if layer == 0 else out_size * directions
        for _ in range(directions):
            weights.append((gen.uniform(-0.6, 0.6, (g, width)),
                            gen.uniform(-0.6, 0.6, (g, out_size)),
                            gen.uniform(-0.6, 0.6, g) if bias else None,
                            gen.uniform(-0.6, 0.6, g) if bias else None,
                            gen.uniform(-0.6, 0.6, (proj, hidden)) if proj else None))
    return weights


def _params(lib, weights, dtype="float64", requires_grad=False):
    return [lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=requires_grad)
            for w in weights for a in w if a is not None]


def _call(lib, mode, x, h0, c0, params, bias, layers, bidirectional, batch_first=False,
          dtype="float64", batch_sizes=None):
    t = lambda a: lib.tensor(a, dtype=getattr(lib, dtype))
    hx = [t(h0), t(c0)] if mode == "LSTM" else t(h0)
    fn = getattr(lib, FUNCTIONS[mode])
    if batch_sizes is not None:
        return fn(t(x), lib.tensor(batch_sizes), hx, params, bias, layers, 0.0, False,
                  bidirectional)
    return fn(t(x), hx, params, bias, layers, 0.0, False, bidirectional, batch_first)


CASES = [  # mode, T, B, I, H, layers, bidirectional, bias, batch_first, proj
    ("LSTM", 5, 3, 4, 6, 2, False, True, False, 0),
    ("LSTM", 4, 2, 3, 5, 1, True, False, True, 0),
    ("LSTM", 3, 2, 3, 5, 2, True, True, False, 2),
    ("GRU", 5, 3, 4, 6, 2, True, True, False, 0),
    ("GRU", 1, 1, 2, 3, 1, False, False, True, 0),
    ("RNN_TANH", 6, 2, 3, 4, 3, False, True, True, 0),
    ("RNN_RELU", 4, 3, 2, 5, 2, True, False, False, 0),
]


def _case_id(case):
    return "-".join(str(v) for v in case)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_matches_numpy_and_torch(case):
    mode, T, B, I, H, layers, bidir, bias, batch_first, proj = case
    gen = np.random.default_rng(len(_case_id(case)))
    D = 2 if bidir else 1
    weights = _weights(mode, gen, I, H, layers, D, bias, proj)
    x = gen.standard_normal((T, B, I))
    h0 = gen.standard_normal((layers * D, B, proj or H))
    c0 = gen.standard_normal((layers * D, B, H)) if mode == "LSTM" else None
    out, h_n, c_n = _np_layers(mode, x, h0, c0, weights, D)
    xin = x.transpose(1, 0, 2) if batch_first else x

    def run(lib):
        res = _call(lib, mode, xin, h0, c0, _params(lib, weights), bias, layers, bidir,
                    batch_first)
        return {f"result {k}": r for k, r in enumerate(res)}
    ours = run(ptl)
    want = [out.transpose(1, 0, 2) if batch_first else out, h_n] + ([c_n] if c0 is not None
                                                                    else [])
    assert len(ours) == len(want)
    for got, ref in zip(ours.values(), want):
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10, atol=1e-12)
    golden.assert_same_results(run, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", list(FUNCTIONS))
@pytest.mark.parametrize("bidir", [False, True])
def test_packed_overload_matches_numpy_and_torch(mode, bidir):
    gen = np.random.default_rng(7)
    lengths, layers, I, H = [5, 3, 3, 1], 2, 3, 4
    D = 2 if bidir else 1
    weights = _weights(mode, gen, I, H, layers, D, True)
    x = gen.standard_normal((5, 4, I))
    h0 = gen.standard_normal((layers * D, 4, H))
    c0 = gen.standard_normal((layers * D, 4, H)) if mode == "LSTM" else None
    out, h_n, c_n = _np_layers(mode, x, h0, c0, weights, D, lengths)
    batch_sizes = [sum(n > t for n in lengths) for t in range(5)]
    rows = [(t, b) for t in range(5) for b in range(batch_sizes[t])]
    data = np.stack([x[t, b] for t, b in rows])

    def run(lib):
        res = _call(lib, mode, data, h0, c0, _params(lib, weights), True, layers, bidir,
                    batch_sizes=batch_sizes)
        return {f"result {k}": r for k, r in enumerate(res)}
    ours = list(run(ptl).values())
    np.testing.assert_allclose(ours[0].numpy(), np.stack([out[t, b] for t, b in rows]),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours[1].numpy(), h_n, rtol=1e-10, atol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(ours[2].numpy(), c_n, rtol=1e-10, atol=1e-12)
    golden.assert_same_results(run, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_same_as_the_module(mode):
    """nn.LSTM / GRU / RNN with the same weights, float32, batch_first, two layers."""
    ptl.manual_seed(3)
    kind = {"LSTM": ptl.nn.LSTM, "GRU": ptl.nn.GRU, "RNN_TANH": ptl.nn.RNN}[mode]
    m = kind(3, 5, 2, batch_first=True, bidirectional=True)
    x, h = ptl.randn(2, 4, 3), ptl.randn(4, 2, 5)
    hx = (h, ptl.randn(4, 2, 5)) if mode == "LSTM" else h
    want = m(x, hx)
    got = getattr(ptl, FUNCTIONS[mode])(x, list(hx) if mode == "LSTM" else hx,
                                        list(m._flat_weights), True, 2, 0.0, False, True, True)
    flat = [want[0]] + (list(want[1]) if mode == "LSTM" else [want[1]])
    assert len(got) == len(flat)
    for g, w in zip(got, flat):
        assert ptl.equal(g, w)


@pytest.mark.parametrize("mode", list(FUNCTIONS))
def test_gradcheck(mode):
    gen = np.random.default_rng(11)
    weights = _weights(mode, gen, 2, 3, 2, 2, True)
    params = _params(ptl, weights, requires_grad=True)
    x = ptl.tensor(gen.standard_normal((3, 2, 2)), requires_grad=True)
    h = ptl.tensor(gen.standard_normal((4, 2, 3)), requires_grad=True)
    c = ptl.tensor(gen.standard_normal((4, 2, 3)), requires_grad=True)
    fn = getattr(ptl, FUNCTIONS[mode])

    def f(x, h, c, *ps):
        hx = [h, c] if mode == "LSTM" else h
        return fn(x, hx, list(ps), True, 2, 0.0, False, True, False)
    assert ptl.autograd.gradcheck(f, (x, h, c, *params))


def test_gradcheck_packed():
    gen = np.random.default_rng(12)
    weights = _weights("LSTM", gen, 2, 3, 1, 1, True)
    params = _params(ptl, weights, requires_grad=True)
    data = ptl.tensor(gen.standard_normal((5, 2)), requires_grad=True)
    h = ptl.tensor(gen.standard_normal((1, 2, 3)), requires_grad=True)
    c = ptl.tensor(gen.standard_normal((1, 2, 3)), requires_grad=True)
    batch_sizes = ptl.tensor([2, 2, 1])
    f = lambda data, h, c, *ps: ptl.lstm(data, batch_sizes, [h, c], list(ps), True, 1, 0.0,
                                        False, False)
    assert ptl.autograd.gradcheck(f, (data, h, c, *params))


def test_dropout_between_layers_when_training():
    ptl.manual_seed(0)
    m = ptl.nn.GRU(3, 4, 2)
    x, h = ptl.randn(5, 2, 3), ptl.zeros(2, 2, 4)
    p = list(m._flat_weights)
    plain = ptl.gru(x, h, p, True, 2, 0.0, False, False, False)[0]
    assert ptl.equal(ptl.gru(x, h, p, True, 2, 0.9, False, False, False)[0], plain)
    assert not ptl.equal(ptl.gru(x, h, p, True, 2, 0.9, True, False, False)[0], plain)
    # one layer: no dropout applies
    one = list(ptl.nn.GRU(3, 4, 1)._flat_weights)
    assert ptl.equal(ptl.gru(x, h[:1], one, True, 1, 0.9, True, False, False)[0],
                     ptl.gru(x, h[:1], one, True, 1, 0.0, False, False, False)[0])


def _error_call(lib, what):
    gen = np.random.default_rng(5)
    lstm_w = _params(lib, _weights("LSTM", gen, 3, 4, 2, 1, True), "float32")
    gru_w = _params(lib, _weights("GRU", gen, 3, 4, 2, 1, True), "float32")
    x, h = lib.zeros(5, 2, 3), lib.zeros(2, 2, 4)
    calls = {
        "lstm one state": lambda: lib.lstm(x, [h], lstm_w, True, 2, 0.0, False, False, False),
        "lstm three states": lambda: lib.lstm(x, [h, h, h], lstm_w, True, 2, 0.0, False, False,
                                              False),
        "gru 7 params": lambda: lib.gru(x, h, gru_w[:-1], True, 2, 0.0, False, False, False),
        "gru too few states": lambda: lib.gru(x, h[:1], gru_w, True, 2, 0.0, False, False,
                                              False),
        "gru too many weights": lambda: lib.gru(x, h, gru_w[:4] + gru_w, True, 2, 0.0, False,
                                                False, False),
        "gru biases not declared": lambda: lib.gru(x, h, gru_w, False, 2, 0.0, False, False,
                                                   False),
        "gru empty params": lambda: lib.gru(x, h, [], True, 0, 0.0, False, False, False),
        "gru dropout 1.5": lambda: lib.gru(x, h, gru_w, True, 2, 1.5, True, False, False),
        "gru dropout -0.5": lambda: lib.gru(x, h, gru_w, True, 2, -0.5, True, False, False),
        "gru double input": lambda: lib.gru(x.double(), h, gru_w, True, 2, 0.0, False, False,
                                            False),
        "gru double weights": lambda: lib.gru(x, h, [w.double() for w in gru_w], True, 2, 0.0,
                                              False, False, False),
        "gru empty sequence": lambda: lib.gru(lib.zeros(0, 2, 3), h, gru_w, True, 2, 0.0,
                                              False, False, False),
        "gru extra argument": lambda: lib.gru(x, h, gru_w, True, 2, 0.0, False, False, False, 3),
        "gru missing argument": lambda: lib.gru(x, h, gru_w, True, 2, 0.0, False, False),
        "lstm_proj wrong count": lambda: lib.lstm(x, [h[..., :3], h], lstm_w, True, 2, 0.0,
                                                  False, False, False),
    }
    return calls[what]()


ERRORS = ["lstm one state", "lstm three states", "gru 7 params", "gru too few states",
          "gru too many weights", "gru biases not declared", "gru empty params",
          "gru dropout 1.5", "gru dropout -0.5", "gru double input", "gru double weights",
          "gru empty sequence", "lstm_proj wrong count"]


@pytest.mark.parametrize("what", ERRORS)
def test_errors_match_torch(what):
    golden.assert_raises(lambda: _error_call(ptl, what), lambda: _error_call(torch, what))


@pytest.mark.parametrize("what", ["gru extra argument", "gru missing argument"])
def test_bad_calls_match_torch(what):
    """PyTorch's parser TypeError, less its per-overload "didn't match because" lines."""
    def same_message(ours, theirs):
        return ours == "\n".join(ln for ln in theirs.split("\n") if "didn't match" not in ln)
    golden.assert_raises(lambda: _error_call(ptl, what), lambda: _error_call(torch, what),
                         compare=same_message)


def test_shape_errors_where_torch_checks_nothing():
    """Where ATen indexes out of range (or aborts), nn.RNNBase's messages."""
    p = list(ptl.nn.LSTM(3, 4, 1)._flat_weights)
    x, h = ptl.zeros(5, 2, 3), ptl.zeros(1, 2, 4)
    with pytest.raises(RuntimeError, match=r"^input must have 3 dimensions, got 2$"):
        ptl.lstm(x[0], [h, h], p, True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match=r"^input.size\(-1\) must be equal to input_size. "
                                           r"Expected 3, got 2$"):
        ptl.lstm(x[..., :2], [h, h], p, True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match=r"^Expected hidden\[1\] size \(1, 2, 4\), "
                                           r"got \[1, 1, 4\]$"):
        ptl.lstm(x, [h, h[:, :1]], p, True, 1, 0.0, False, False, False)
    g = list(ptl.nn.GRU(3, 4, 1)._flat_weights)
    with pytest.raises(RuntimeError, match=r"^Expected hidden size \(1, 5, 4\), "
                                           r"got \[1, 2, 4\]$"):
        ptl.gru(x, h, g, True, 1, 0.0, False, False, True)
    with pytest.raises(RuntimeError, match=r"^input must have 2 dimensions, got 3$"):
        ptl.gru(x, ptl.tensor([5, 5]), h, g, True, 1, 0.0, False, False)
