"""The recurrent layer's CUDA path checked on the host (src/cuda/rnn_plan.c and rnn.cu over
rnn_plan.h's per-thread functions and src/aten/native/rnn_cell_math.h's cell formulas, which
the CPU rows run too; Note [CUDA recurrent layer]): with _C._cuda_kernel_emulation on,
_ptl_rnn_layer and its backward on CPU tensors take the device's time loop (rnn.c's checks,
the step GEMMs through ptl_gemm_add, one emulated cell launch a step and pass, the weights'
gradients through the device GEMM and sum) and must reproduce a NumPy float64 time loop for
every mode (RNN tanh and relu, LSTM with and without proj_size, GRU), with and without
biases, forward and reverse, with packed batch sizes, given states and T = 0; the CPU
kernel's results and gradients; and a float64 gradcheck; under tunings whose grids hold one
block (grid-stride loops), a few and many, with B H at and across the block sizes.  nn.RNN,
LSTM and GRU run through it end to end.  Needs no device."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn as nn
from pytorchlite.autograd import gradcheck
from kernel_emulation import TUNINGS, emulated

aten = ptl.ops.aten
RELU, TANH, LSTM, GRU = 0, 1, 2, 3
GATES = {RELU: 1, TANH: 1, LSTM: 4, GRU: 3}
TOL = {ptl.float64: 1e-12, ptl.float32: 2e-5}


def sig(x):
    return 1 / (1 + np.exp(-x))


def np_layer(ig, hx, cx, w_hh, b_ih, b_hh, w_hr, mode, reverse, bs):
    """(output [T, B, P], hy, cy) of one layer and direction, in float64"""
    T, B, G = ig.shape
    H = G // GATES[mode]
    out = np.zeros((T, B, hx.shape[1]))
    h = hx.copy()
    c = cx.copy() if cx is not None else None
    bi = b_ih if b_ih is not None else np.zeros(G)
    bh = b_hh if b_hh is not None else np.zeros(G)
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        n = B if bs is None else bs[t]
        hp = h[:n] @ w_hh.T + bh
        x = ig[t, :n] + bi
        if mode == GRU:
            r = sig(x[:, :H] + hp[:, :H])
            z = sig(x[:, H:2 * H] + hp[:, H:2 * H])
            new = np.tanh(x[:, 2 * H:] + r * hp[:, 2 * H:])
            h[:n] = new + z * (h[:n] - new)
        elif mode == LSTM:
            s = x + hp
            i, f, g, o = sig(s[:, :H]), sig(s[:, H:2 * H]), np.tanh(s[:, 2 * H:3 * H]), \
                sig(s[:, 3 * H:])
            c[:n] = f * c[:n] + i * g
            hn = o * np.tanh(c[:n])
            h[:n] = hn @ w_hr.T if w_hr is not None else hn
        else:
            s = x + hp
            h[:n] = np.maximum(s, 0) if mode == RELU else np.tanh(s)
        out[t] = h
    return out, h, c


def layer_inputs(rng, mode, T, B, H, P, bias, dtype):
    """the op's tensor arguments (float64 NumPy and ptl), requiring grad"""
    G = GATES[mode] * H
    a = {"ig": rng.standard_normal((T, B, G)), "hx": rng.standard_normal((B, P)) * 0.5,
         "cx": rng.standard_normal((B, H)) * 0.5 if mode == LSTM else None,
         "w_hh": rng.standard_normal((G, P)) / np.sqrt(P),
         "b_ih": rng.standard_normal(G) * 0.3 if bias else None,
         "b_hh": rng.standard_normal(G) * 0.3 if bias else None,
         "w_hr": rng.standard_normal((P, H)) / np.sqrt(H) if P != H else None}
    t = {k: None if v is None else ptl.tensor(v).to(dtype).requires_grad_(True)
         for k, v in a.items()}
    return a, t


def call(t, mode, reverse, bs):
    out = aten._ptl_rnn_layer(t["ig"], t["hx"], t["cx"], t["w_hh"], t["b_ih"], t["b_hh"],
                              t["w_hr"], mode, reverse, bs)
    return [out[0], out[2]] + ([out[3]] if mode == LSTM else [])


def grads(t, outs, seed):
    rng = np.random.default_rng(seed)
    ws = [ptl.tensor(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in outs]
    leaves = [v for v in t.values() if v is not None]
    return ptl.autograd.grad(outs, leaves, ws)


def check(got, want, dtype):
    got = got.detach().to(ptl.float64).numpy()
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype])


def same_with_the_cell_kernel_emulated(run, leaves, first_weight):
    """run() -> the outputs; they and the gradients of sum((i + first_weight) * output i)
    with respect to leaves, on the host and with the cell kernel emulated, are equal, and
    the emulated run launched the cell kernel."""
    def outputs_and_grads():
        outs = run()
        loss = sum((o * (i + first_weight)).sum() for i, o in enumerate(outs))
        return [o.detach() for o in outs] + list(ptl.autograd.grad(loss, leaves))
    want = outputs_and_grads()
    with emulated(TUNINGS["small"]) as ran:
        got = outputs_and_grads()
    for g, w in zip(got, want):
        check(g, w.numpy(), ptl.float64)
    assert ran["rnn_cell"] > 0


# (mode, T, B, H, P, bias, reverse, batch sizes): B H of 6, 32, 33 and 35 (the tiny tuning's
# block is 32, its grid one block), T = 0, an empty batch, packed lengths with rows that stop
CASES = [(TANH, 3, 2, 3, 3, True, False, None), (RELU, 4, 5, 7, 7, True, True, None),
         (LSTM, 3, 1, 8, 8, True, False, None), (LSTM, 4, 3, 11, 5, True, True, None),
         (LSTM, 2, 4, 8, 8, False, False, None), (GRU, 3, 3, 11, 11, True, False, None),
         (GRU, 5, 2, 4, 4, False, True, None), (TANH, 0, 2, 3, 3, True, False, None),
         (LSTM, 3, 0, 4, 4, True, False, None),
         (LSTM, 4, 3, 6, 3, True, False, [3, 2, 2, 1]), (GRU, 4, 3, 5, 5, True, True, [3, 3, 1, 0]),
         (RELU, 3, 4, 9, 9, True, False, [4, 2, 1])]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32], ids=str)
def test_layer_matches_numpy_and_the_cpu(tuning, dtype):
    rng = np.random.default_rng(0)
    for k, (mode, T, B, H, P, bias, reverse, lengths) in enumerate(CASES):
        a, t = layer_inputs(rng, mode, T, B, H, P, bias, dtype)
        bs = ptl.tensor(lengths) if lengths is not None else None
        cpu = call(t, mode, reverse, bs)
        cpu_grads = grads(t, cpu, k)
        with emulated(TUNINGS[tuning]) as ran:
            dev = call(t, mode, reverse, bs)
            dev_grads = grads(t, dev, k)
        want = np_layer(a["ig"], a["hx"], a["cx"], a["w_hh"], a["b_ih"], a["b_hh"], a["w_hr"],
                        mode, reverse, lengths)
        for d, c, w in zip(dev, cpu, want):
            assert d.dtype == dtype and d.shape == c.shape
            check(d, w, dtype)
            check(d, c.detach().to(ptl.float64).numpy(), dtype)
        for d, c in zip(dev_grads, cpu_grads):
            assert d.dtype == dtype and d.shape == c.shape
            check(d, c.to(ptl.float64).numpy(), dtype)
        # a step launches its cell once forward, once or twice backward (none for no rows)
        assert ran["rnn_cell"] >= (2 * T if B else 0), (k, ran["rnn_cell"])


@pytest.mark.parametrize("mode", [RELU, TANH, LSTM, GRU])
def test_gradcheck_through_the_emulated_kernels(mode):
    rng = np.random.default_rng(mode)
    P = 2 if mode == LSTM else 3
    _, t = layer_inputs(rng, mode, 3, 2, 3, P, True, ptl.float64)
    names = [k for k, v in t.items() if v is not None]
    bs = ptl.tensor([2, 1, 1])

    def fn(*args):
        return tuple(call(dict(t, **dict(zip(names, args))), mode, mode == GRU, bs))
    with emulated(TUNINGS["tiny"]) as ran:
        assert gradcheck(fn, tuple(t[k] for k in names))
    assert ran["rnn_cell"] > 0


@pytest.mark.parametrize("name,kwargs", [
    ("RNN", {"nonlinearity": "relu"}), ("LSTM", {"proj_size": 2}), ("LSTM", {}),
    ("GRU", {"bidirectional": True, "num_layers": 2})])
def test_modules_and_packed_sequences_end_to_end(name, kwargs):
    """nn modules (the input GEMM, then _ptl_rnn_layer per layer and direction) with the
    device path against the CPU's: outputs, states and every gradient."""
    ptl.manual_seed(0)
    mod = getattr(nn, name)(4, 5, **kwargs).double()
    x = ptl.randn(6, 3, 4, dtype=ptl.float64, requires_grad=True)
    leaves = [x] + list(mod.parameters())

    def run():
        packed = nn.utils.rnn.pack_padded_sequence(x, [6, 4, 2])
        out, state = mod(packed)
        states = state if isinstance(state, tuple) else (state,)
        outs = [out.data] + list(states)
        return outs
    same_with_the_cell_kernel_emulated(run, leaves, 1)


def test_errors_are_the_cpu_kernels():
    """The checks run before the device path: the CPU kernel's messages."""
    rng = np.random.default_rng(1)
    _, t = layer_inputs(rng, LSTM, 2, 2, 3, 3, True, ptl.float64)
    with emulated(TUNINGS["small"]) as ran:
        with pytest.raises(RuntimeError, match="an LSTM needs cx"):
            aten._ptl_rnn_layer(t["ig"], t["hx"], None, t["w_hh"], None, None, None, LSTM,
                                False, None)
        with pytest.raises(RuntimeError, match=r"batch_sizes\[1\] = 5 is not in \[0, 2\]"):
            aten._ptl_rnn_layer(t["ig"], t["hx"], t["cx"], t["w_hh"], None, None, None, LSTM,
                                False, ptl.tensor([1, 5]))
    assert ran["rnn_cell"] == 0


# ---- the fused cells (Note [CUDA fused cells] in rnn.c): one launch of the cell kernel ----

def np_lstm_cell(ig, hg, cx, bi, bh):
    s = ig + hg + (bi + bh if bi is not None else 0)
    H = cx.shape[1]
    i, f, g, o = sig(s[:, :H]), sig(s[:, H:2 * H]), np.tanh(s[:, 2 * H:3 * H]), sig(s[:, 3 * H:])
    cy = f * cx + i * g
    return o * np.tanh(cy), cy


def np_gru_cell(ig, hg, hx, bi, bh):
    H = hx.shape[1]
    bi = bi if bi is not None else np.zeros(3 * H)
    bh = bh if bh is not None else np.zeros(3 * H)
    r = sig(ig[:, :H] + bi[:H] + hg[:, :H] + bh[:H])
    z = sig(ig[:, H:2 * H] + bi[H:2 * H] + hg[:, H:2 * H] + bh[H:2 * H])
    n = np.tanh(ig[:, 2 * H:] + bi[2 * H:] + r * (hg[:, 2 * H:] + bh[2 * H:]))
    return n + z * (hx - n)


def cell_inputs(rng, gates, B, H, bias, dtype, strided):
    """(NumPy float64, ptl tensors requiring grad): the gates, the state, the biases; the
    gates and state non-contiguous when strided (the kernel's contiguous copies)"""
    G = gates * H
    a = [rng.standard_normal((B, G)), rng.standard_normal((B, G)),
         rng.standard_normal((B, H)) * 0.5,
         rng.standard_normal(G) * 0.3 if bias else None,
         rng.standard_normal(G) * 0.3 if bias else None]
    t = []
    for k, v in enumerate(a):
        if v is None:
            t.append(None)
            continue
        x = ptl.tensor(v.T.copy()).to(dtype).t() if strided and k < 3 else \
            ptl.tensor(v).to(dtype)
        t.append(x.detach().requires_grad_(True))
    return a, t


# (B, H): B H at and across the tiny tuning's block of 32 and its grid of one block; no rows
CELL_SHAPES = [(1, 1), (2, 3), (4, 8), (1, 33), (3, 11), (0, 4), (5, 0)]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32], ids=str)
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_fused_cells_match_numpy_and_the_cpu(tuning, dtype, cell):
    rng = np.random.default_rng(3)
    fn = aten._thnn_fused_lstm_cell if cell == "lstm" else aten._thnn_fused_gru_cell
    for B, H in CELL_SHAPES:
        for bias in (True, False):
            for strided in (False, True):
                a, t = cell_inputs(rng, 4 if cell == "lstm" else 3, B, H, bias, dtype, strided)
                args = t if bias else t[:3]
                cpu = fn(*args)
                leaves = [x for x in args if x is not None]
                ws = [ptl.tensor(rng.standard_normal(tuple(cpu[0].shape))).to(dtype)]
                outs = [cpu[0]] + ([cpu[1]] if cell == "lstm" else [])
                ws += [ptl.tensor(rng.standard_normal(tuple(o.shape))).to(dtype)
                       for o in outs[1:]]
                cpu_grads = ptl.autograd.grad(outs, leaves, ws)
                with emulated(TUNINGS[tuning]) as ran:
                    dev = fn(*args)
                    dev_outs = [dev[0]] + ([dev[1]] if cell == "lstm" else [])
                    dev_grads = ptl.autograd.grad(dev_outs, leaves, ws)
                want = np_lstm_cell(*a) if cell == "lstm" else (np_gru_cell(*a),)
                for d, c, w in zip(dev_outs, outs, want):
                    assert d.dtype == dtype and d.shape == c.shape
                    check(d, w, dtype)
                    check(d, c.detach().to(ptl.float64).numpy(), dtype)
                for d, c in zip(dev[len(dev_outs):], cpu[len(outs):]):   # the workspace
                    check(d, c.detach().to(ptl.float64).numpy(), dtype)
                for d, c in zip(dev_grads, cpu_grads):
                    assert d.dtype == dtype and d.shape == c.shape
                    check(d, c.to(ptl.float64).numpy(), dtype)
                # forward and backward: one launch each (none without elements)
                assert ran["rnn_cell"] == (2 if B * H else 0), (B, H, ran["rnn_cell"])


@pytest.mark.parametrize("given", ["both", "grad_hy", "grad_cy"])
def test_lstm_cell_backward_takes_none_gradients(given):
    """grad_hy or grad_cy None reads as zeros, as on the CPU"""
    rng = np.random.default_rng(4)
    _, t = cell_inputs(rng, 4, 3, 5, True, ptl.float64, False)
    hy, cy, ws = aten._thnn_fused_lstm_cell(*t)
    gh = ptl.randn(3, 5, dtype=ptl.float64) if given != "grad_cy" else None
    gc = ptl.randn(3, 5, dtype=ptl.float64) if given != "grad_hy" else None
    want = aten._thnn_fused_lstm_cell_backward_impl(gh, gc, t[2], cy, ws, True)
    with emulated(TUNINGS["tiny"]) as ran:
        got = aten._thnn_fused_lstm_cell_backward_impl(gh, gc, t[2], cy, ws, True)
    assert ran["rnn_cell"] == 1
    for g, w in zip(got, want):
        check(g, w.numpy(), ptl.float64)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
@pytest.mark.parametrize("bias", [True, False])
def test_fused_cells_gradcheck_through_the_emulated_kernels(cell, bias):
    rng = np.random.default_rng(5)
    _, t = cell_inputs(rng, 4 if cell == "lstm" else 3, 2, 3, bias, ptl.float64, True)
    args = tuple(x for x in t if x is not None)
    fn = aten._thnn_fused_lstm_cell if cell == "lstm" else aten._thnn_fused_gru_cell

    def f(*xs):
        out = fn(*xs)
        return (out[0], out[1]) if cell == "lstm" else out[0]
    with emulated(TUNINGS["tiny"]) as ran:
        assert gradcheck(f, args)
    assert ran["rnn_cell"] > 0


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell"])
def test_cell_modules_end_to_end(name):
    ptl.manual_seed(1)
    mod = getattr(nn, name)(4, 6).double()
    x = ptl.randn(3, 4, dtype=ptl.float64, requires_grad=True)
    leaves = [x] + list(mod.parameters())

    def run():
        out = mod(x)
        outs = list(out) if isinstance(out, tuple) else [out]
        return outs
    same_with_the_cell_kernel_emulated(run, leaves, 2)


def test_fused_cell_errors_are_the_cpu_kernels():
    """The checks run before the device path: the CPU kernel's messages, no launch."""
    g = ptl.randn(2, 8, dtype=ptl.float64)
    cx = ptl.randn(2, 2, dtype=ptl.float64)
    with emulated(TUNINGS["small"]) as ran:
        with pytest.raises(RuntimeError, match=r"Expected tensor for argument #1 "
                                               r"'input_gates' to have same size as tensor "
                                               r"for argument #2 'hidden_gates'"):
            aten._thnn_fused_lstm_cell(g, g[:1], cx)
        with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
            aten._thnn_fused_lstm_cell(g, g.float(), cx)
        with pytest.raises(NotImplementedError,
                           match="\"_thnn_fused_gru_cell_cpu\" not implemented for 'Long'"):
            aten._thnn_fused_gru_cell(g.long(), g.long(), cx.long())
        with pytest.raises(RuntimeError, match=r"workspace must have size \[2, 10\]"):
            aten._thnn_fused_gru_cell_backward(cx, g, True)
    assert ran["rnn_cell"] == 0
