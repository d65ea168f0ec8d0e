"""The recurrent layer without a gradient (rnn.c Note [Recurrent layer]): the op's input form
(mode + 8: x and [W_ih, W_hh] instead of x W_ih^T and W_hh, each step one GEMM
[x_t, h_{t-1}] [W_ih, W_hh]^T), which nn.LSTM / nn.RNN take on the CPU when no output needs
a gradient, and the two-step workspace every mode keeps then.  Against the NumPy float64
time loop of test_rnn.py, the modules' forward with a gradient, 1 and 2 threads bit for bit
across the GEMM's and the row split's thresholds, and the form's errors."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.nn.modules import rnn
from test_rnn import (LAYER_MODES, LAYER_SHAPES, MODULE_CASES, _as,
                      _layer_arrays, layer_ref)
from test_seq_layers import randn

aten = ptl.ops.aten
INPUT_FORM = 8
FORM_KINDS = [("LSTM", 0), ("LSTM", 2), ("RNN_TANH", 0), ("RNN_RELU", 0)]


def _rounded(a, dtype):
    """a's arrays as dtype holds them, in float64"""
    if dtype == ptl.float64:
        return a
    return {n: None if v is None else v.astype(np.float32).astype(np.float64)
            for n, v in a.items()}


def _form_call(a, mode, dtype, reverse, batch_sizes):
    """_ptl_rnn_layer's input form on a's arrays (no gradient)."""
    w = np.concatenate([a["w_ih"], a["w_hh"]], 1)
    args = [_as(a["x"], dtype), _as(a["hx"], dtype), _as(a["cx"], dtype), _as(w, dtype)]
    args += [_as(a[n], dtype) for n in ("b_ih", "b_hh", "w_hr")]
    bs = None if batch_sizes is None else ptl.tensor(batch_sizes, dtype=ptl.int64)
    return aten._ptl_rnn_layer(*args, LAYER_MODES[mode] + INPUT_FORM, reverse, bs)


def _check_against_numpy(res, a, mode, dtype, reverse, batch_sizes, tol):
    x = _rounded(a, dtype)
    ref = layer_ref(mode, x["x"] @ x["w_ih"].T, x["hx"], x["cx"], x["w_hh"], x["b_ih"],
                    x["b_hh"], x["w_hr"], reverse, batch_sizes)
    out, _, hy, cy = res
    for got, want, what in ((out, ref[0], "output"), (hy, ref[1], "hy"), (cy, ref[2], "cy")):
        if want is None:
            assert got is None, what
            continue
        assert got.dtype == dtype, what
        np.testing.assert_allclose(got.double().numpy(), want, rtol=tol, atol=tol,
                                   err_msg=what)


@pytest.mark.parametrize("mode,proj", FORM_KINDS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("dtype,tol", [(ptl.float64, 1e-12), (ptl.float32, 2e-5)])
def test_input_form_matches_numpy(mode, proj, reverse, packed, dtype, tol):
    """Every shape of test_rnn.py (T = 0, B = 0, one row, biases or none) and an input
    width of 0, 1 and 7."""
    for k, (T, B, H, sizes) in enumerate(LAYER_SHAPES):
        for width in (0, 1, 7):
            a = _layer_arrays(mode, T, B, H, proj, bias=k != 1, seed=k, I=width)
            bs = sizes if packed else None
            with ptl.no_grad():
                res = _form_call(a, mode, dtype, reverse, bs)
            _check_against_numpy(res, a, mode, dtype, reverse, bs, tol)


@pytest.mark.parametrize("mode,proj", FORM_KINDS + [("GRU", 0)])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("T", [1, 2, 3, 6])
def test_two_step_workspace_keeps_the_bits(mode, proj, packed, T):
    """Without a gradient the old form's workspace keeps two steps (t % 2) instead of T
    (from T = 3 on): the same output and states, bit for bit, as with one; with a gradient
    wanted it keeps every step."""
    B, H = 5, 4
    a = _layer_arrays(mode, T, B, H, proj, seed=3)
    gates = a["x"] @ a["w_ih"].T
    bs = ptl.tensor([5, 4, 4, 2, 1, 1][:T]) if packed else None
    names = ("hx", "cx", "w_hh", "b_ih", "b_hh", "w_hr")

    def call(grad):
        args = [_as(gates, ptl.float64)] + [_as(a[n], ptl.float64) for n in names]
        if grad:
            args[3].requires_grad_()
        return aten._ptl_rnn_layer(*args, LAYER_MODES[mode], False, bs)
    with ptl.no_grad():
        lean = call(True)
    full = call(True)
    width = {"LSTM": 5 * H + (H if proj else 0), "GRU": 5 * H}.get(mode, 0)
    assert full[1].numel() == T * B * width and lean[1].numel() == min(T, 2) * B * width
    for got, want in zip(lean[:1] + lean[2:], full[:1] + full[2:]):
        if want is None:
            assert got is None
            continue
        np.testing.assert_array_equal(got.numpy(), want.detach().numpy())


def _module_out(m, x, lengths, hx, dtype, grad):
    px = _as(x, dtype, grad=grad)
    h0 = [_as(h, dtype, grad=grad) for h in hx]
    inp = px
    if lengths is not None:
        inp = ptl.nn.utils.rnn.pack_padded_sequence(px, ptl.tensor(lengths),
                                                    batch_first=m.batch_first,
                                                    enforce_sorted=False)
    out, h = m(inp, tuple(h0) if len(h0) == 2 else h0[0])
    out = out.data if lengths is not None else out
    return [t.detach() for t in [out] + (list(h) if isinstance(h, tuple) else [h])]


@pytest.mark.parametrize("name,kwargs", MODULE_CASES)
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("dtype,tol", [(ptl.float64, 1e-12), (ptl.float32, 1e-5)])
def test_modules_no_grad_match_the_grad_forward(monkeypatch, name, kwargs, packed, dtype,
                                                tol):
    """nn.LSTM / GRU / RNN under no_grad (LSTM and RNN take the input form; GRU the old form
    with the two-step workspace) against the forward that records a gradient: 1 and 2
    layers, both directions, batch_first, proj_size, packed sequences, given states."""
    m = getattr(ptl.nn, name)(3, 5, dtype=dtype, **kwargs)
    T, B = 7, 4
    x = randn(B, T, 3, seed=2) if kwargs.get("batch_first") else randn(T, B, 3, seed=2)
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    hx = [randn(layers, B, kwargs.get("proj_size") or 5, seed=3)]
    if name == "LSTM":
        hx.append(randn(layers, B, 5, seed=4))
    lengths = [5, 7, 1, 3] if packed else None
    want = _module_out(m, x, lengths, hx, dtype, True)
    forms = []
    real = rnn._input_form
    monkeypatch.setattr(rnn, "_input_form", lambda *a: forms.append(real(*a)) or forms[-1])
    with ptl.no_grad():
        got = _module_out(m, x, lengths, hx, dtype, False)
    assert forms == [name != "GRU"] * layers
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.double().numpy(), w.double().numpy(), rtol=tol, atol=tol)


def test_input_form_only_without_gradients():
    """Grad mode on with a parameter, an input or a state that requires a gradient: the old
    form; none, or no_grad: the input form."""
    m = ptl.nn.LSTM(3, 4)
    x, h0 = ptl.randn(2, 1, 3), ptl.zeros(1, 1, 4)
    state = (h0[0], h0[0])
    weights = [m.weight_ih_l0, m.weight_hh_l0, m.bias_ih_l0, m.bias_hh_l0, None]
    assert not rnn._input_form("LSTM", x, state, weights)
    assert not rnn._input_form("GRU", x, state, [w.detach() for w in weights[:4]] + [None])
    plain = [w.detach() for w in weights[:4]] + [None]
    assert rnn._input_form("LSTM", x, state, plain)
    assert rnn._input_form("RNN_TANH", x, h0[0], plain)
    assert not rnn._input_form("LSTM", x.requires_grad_(), state, plain)
    assert not rnn._input_form("LSTM", x.detach(), (h0[0].requires_grad_(), h0[0]), plain)
    with ptl.no_grad():
        assert rnn._input_form("LSTM", x, state, weights)


@pytest.mark.parametrize("name", ["LSTM", "RNN"])
def test_frozen_module_in_grad_mode(name):
    """A module whose parameters were made not to require gradients (a frozen encoder) takes
    the input form in grad mode, with given states (views of hx): the values of the forward
    with gradients, no grad_fn."""
    m = getattr(ptl.nn, name)(3, 4, 2, bidirectional=True)
    t = lambda *shape, seed: ptl.tensor(randn(*shape, seed=seed), dtype=ptl.float32)
    x = t(5, 2, 3, seed=1)
    hx = (t(4, 2, 4, seed=2), t(4, 2, 4, seed=3)) if name == "LSTM" else t(4, 2, 4, seed=2)
    want = m(x, hx)
    m.requires_grad_(False)
    got = m(x, hx)
    assert got[0].grad_fn is None
    flat = lambda r: [r[0]] + (list(r[1]) if name == "LSTM" else [r[1]])
    for g, w in zip(flat(got), flat(want)):
        np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-6)


# (mode, proj, T, B, H, I, packed): rows cut between two threads or not (Note [Recurrent
# layer threads], as test_rnn.py's SPLIT_CASES: B 7 one unit, 8 two parts, 13 a last part of
# 5 rows, across LAYER_SPLIT_MACS per part), B across the GEMM's packing limits (24 / 25,
# 64 / 65 rows), the step GEMM's K = I + P in one block up to 320 and in equal blocks past
# it (I 240 / 241 with H 80), its columns split between two threads when the rows are not
# (LSTM B 7, H 387 / 388), an RNN's relu and tanh.
THREAD_CASES = [("LSTM", 0, 117, 35, 16, 3, False), ("LSTM", 0, 128, 32, 16, 3, True),
                ("LSTM", 0, 150, 7, 32, 5, False), ("LSTM", 0, 128, 8, 32, 5, False),
                ("LSTM", 24, 110, 13, 32, 4, True), ("RNN_TANH", 0, 90, 12, 64, 6, True),
                ("RNN_RELU", 0, 64, 17, 64, 2, False), ("LSTM", 0, 3, 24, 16, 3, False),
                ("LSTM", 0, 3, 25, 16, 3, False), ("LSTM", 0, 3, 64, 16, 3, True),
                ("LSTM", 0, 3, 65, 16, 3, True), ("LSTM", 0, 3, 4, 80, 240, False),
                ("LSTM", 0, 3, 4, 80, 241, False), ("RNN_TANH", 0, 3, 5, 80, 241, False),
                ("LSTM", 0, 3, 7, 387, 3, False), ("LSTM", 0, 3, 7, 388, 3, False)]


@pytest.mark.parametrize("mode,proj,T,B,H,I,packed", THREAD_CASES)
@pytest.mark.parametrize("dtype,tol", [(ptl.float64, 1e-10), (ptl.float32, 1e-4)])
def test_input_form_threads(mode, proj, T, B, H, I, packed, dtype, tol):
    """The same bits on 1 and 2 threads, and the NumPy time loop."""
    a = _layer_arrays(mode, T, B, H, proj, seed=T + B, I=I)
    a["w_hh"] /= np.sqrt(a["w_hh"].shape[1])   # no chaos over 100 steps
    a["w_ih"] /= np.sqrt(max(I, 1))
    bs = None
    if packed:
        sizes = np.sort(np.random.default_rng(B).integers(1, B + 1, T))[::-1]
        sizes[0] = B
        bs = sizes.tolist()
    saved = ptl.get_num_threads()
    runs = []
    try:
        for nt in (1, 2):
            ptl.set_num_threads(nt)
            with ptl.no_grad():
                runs.append(_form_call(a, mode, dtype, True, bs))
    finally:
        ptl.set_num_threads(saved)
    for one, two in zip(runs[0][:1] + runs[0][2:], runs[1][:1] + runs[1][2:]):   # no workspace
        if one is not None:
            np.testing.assert_array_equal(one.numpy(), two.numpy())
    _check_against_numpy(runs[0], a, mode, dtype, True, bs, tol)


def test_input_form_errors():
    a = _layer_arrays("LSTM", 2, 3, 2, seed=0, I=3)
    fn = "(while checking arguments for _ptl_rnn_layer)"
    with ptl.no_grad():
        with pytest.raises(RuntimeError, match=re.escape("_ptl_rnn_layer: unknown mode 11")):
            _form_call(_layer_arrays("GRU", 2, 3, 2, seed=0), "GRU", ptl.float64, False, None)
        w = _as(np.concatenate([a["w_ih"], a["w_hh"]], 1), ptl.float64)
        with pytest.raises(RuntimeError, match=re.escape("_ptl_rnn_layer: unknown mode 12")):
            aten._ptl_rnn_layer(_as(a["x"], ptl.float64), _as(a["hx"], ptl.float64),
                                _as(a["cx"], ptl.float64), w, None, None, None, 12, False,
                                None)
        bad = dict(a, w_hh=a["w_hh"][:, :1])
        with pytest.raises(RuntimeError, match=re.escape(
                "Expected tensor of size [8, 5], but got tensor of size [8, 4] for argument "
                f"#4 'w_hh' {fn}")):
            _form_call(bad, "LSTM", ptl.float64, False, None)
        w = _as(np.concatenate([a["w_ih"], a["w_hh"]], 1), ptl.float64)
        with pytest.raises(RuntimeError, match=re.escape(
                f"Expected 2-dimensional tensor, but got 1-dimensional tensor for argument "
                f"#4 'w_hh' {fn}")):
            aten._ptl_rnn_layer(_as(a["x"], ptl.float64), _as(a["hx"], ptl.float64),
                                _as(a["cx"], ptl.float64), w[0], None, None, None, 10, False,
                                None)
    args = [_as(a[n], ptl.float64) for n in ("x", "hx", "cx")] + [w.requires_grad_()]
    with pytest.raises(RuntimeError, match=re.escape(
            "_ptl_rnn_layer: the input form (mode 10) is for CPU tensors that need no "
            "gradient")):
        aten._ptl_rnn_layer(*args, None, None, None, 10, False, None)
