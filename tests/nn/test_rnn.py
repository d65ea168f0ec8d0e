"""The recurrent modules: nn.RNN / LSTM / GRU against torch (live, or its stored answers
without it: tests/golden.py) in float64 on
sequences longer than autograd's 64-input limit, packed input, every option, and the fused
cell ops with their derivative formulas (gradcheck / gradgradcheck)."""
import functools
import inspect
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import pytorchlite as ptl
import golden
from helpers import ROOT, torch
from test_seq_layers import TOL, _build, _close, _ptl, _torch, check_module, randn


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

    def run(lib):
        m, make = (ours, _ptl) if lib is ptl else (theirs, _torch)
        px = make(x, True)
        out = m(lib.nn.utils.rnn.pack_padded_sequence(
            px, ptl.tensor(lengths) if lib is ptl else lengths, enforce_sorted=False))
        flat = [out[0].data] + list(out[1] if name == "LSTM" else [out[1]])
        sum((t * make(randn(*t.shape, seed=5 + k))).sum() for k, t in enumerate(flat)).backward()
        res = {f"output {k}": t.detach() for k, t in enumerate(flat)}
        res["grad of the padded input"] = px.grad
        res.update({n: p.grad for n, p in m.named_parameters()})
        return res
    golden.assert_same_results(run, rtol=TOL, atol=TOL)


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


# ---- the fused cells: NumPy float64 references ----

aten = ptl.ops.aten


def _sig(x):
    return 1 / (1 + np.exp(-x))


def lstm_ref(ig, hg, cx, bi=None, bh=None):
    g = ig + hg + (0 if bi is None else bi + bh)
    h = cx.shape[1]
    i, f, gg, o = _sig(g[:, :h]), _sig(g[:, h:2 * h]), np.tanh(g[:, 2 * h:3 * h]), _sig(g[:, 3 * h:])
    cy = f * cx + i * gg
    return o * np.tanh(cy), cy, np.concatenate([i, f, gg, o], 1)


def lstm_backward_ref(ghy, gcy, cx, cy, ws):
    h = cx.shape[1]
    i, f, g, o = ws[:, :h], ws[:, h:2 * h], ws[:, 2 * h:3 * h], ws[:, 3 * h:]
    tc = np.tanh(cy)
    gct = ghy * o * (1 - tc ** 2) + gcy
    gates = np.concatenate([gct * g * i * (1 - i), gct * cx * f * (1 - f), gct * i * (1 - g ** 2),
                            ghy * tc * o * (1 - o)], 1)
    return gates, gct * f, gates.sum(0)


def gru_ref(ig, hg, hx, bi=None, bh=None):
    h = hx.shape[1]
    if bi is not None:
        ig, hg = ig + bi, hg + bh
    r = _sig(ig[:, :h] + hg[:, :h])
    z = _sig(ig[:, h:2 * h] + hg[:, h:2 * h])
    n = np.tanh(ig[:, 2 * h:] + r * hg[:, 2 * h:])
    return n + z * (hx - n), np.concatenate([r, z, n, hx, hg[:, 2 * h:]], 1)


def gru_backward_ref(ghy, ws):
    h = ghy.shape[1]
    r, z, n, hx, hn = (ws[:, k * h:(k + 1) * h] for k in range(5))
    gn = ghy * (1 - z) * (1 - n ** 2)
    gz = ghy * (hx - n) * z * (1 - z)
    gr = gn * hn * r * (1 - r)
    gi, gh = np.concatenate([gr, gz, gn], 1), np.concatenate([gr, gz, gn * r], 1)
    return gi, gh, ghy * z, np.stack([gi.sum(0), gh.sum(0)])


def _layout(a, layout):
    """a as a tensor in the given layout: contiguous, transposed storage, or a column slice."""
    if layout == "transposed" and a.ndim == 2:
        return ptl.from_numpy(np.ascontiguousarray(a.T)).t()
    if layout == "sliced":
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],))
        wide[..., ::2] = a
        return ptl.from_numpy(wide)[..., ::2]
    return ptl.from_numpy(a.copy())


def _close_np(t, ref, tol=1e-12):
    assert tuple(t.shape) == ref.shape
    np.testing.assert_allclose(t.detach().numpy(), ref, rtol=tol, atol=tol)


CELL_SHAPES = [(3, 5), (1, 1), (0, 4), (4, 9), (2, 16)]   # (batch, hidden): tails of 8 lanes


@pytest.mark.parametrize("b,h", CELL_SHAPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("bias", [False, True])
def test_fused_lstm_cell_matches_numpy(b, h, layout, bias):
    rng = np.random.default_rng(b * 10 + h)
    ig, hg = 2 * rng.standard_normal((b, 4 * h)), 2 * rng.standard_normal((b, 4 * h))
    cx = rng.standard_normal((b, h))
    bi, bh = (rng.standard_normal(4 * h), rng.standard_normal(4 * h)) if bias else (None, None)
    args = [_layout(a, layout) if a is not None else None for a in (ig, hg, cx, bi, bh)]
    hy, cy, ws = aten._thnn_fused_lstm_cell(*args)
    for t, ref in zip((hy, cy, ws), lstm_ref(ig, hg, cx, bi, bh)):
        _close_np(t, ref)
    ghy, gcy = rng.standard_normal((b, h)), rng.standard_normal((b, h))
    refs = lstm_backward_ref(ghy, gcy, cx, cy.numpy(), ws.numpy())
    out = aten._thnn_fused_lstm_cell_backward_impl(_layout(ghy, layout), _layout(gcy, layout),
                                                   args[2], cy, ws, bias)
    for t, ref in zip(out, refs if bias else refs[:2]):
        _close_np(t, ref)
    assert (out[2] is None) == (not bias)
    zero = np.zeros((b, h))
    no_hy = aten._thnn_fused_lstm_cell_backward_impl(None, _layout(gcy, layout), args[2], cy, ws,
                                                     True)
    _close_np(no_hy[0], lstm_backward_ref(zero, gcy, cx, cy.numpy(), ws.numpy())[0])
    no_cy = aten._thnn_fused_lstm_cell_backward_impl(_layout(ghy, layout), None, args[2], cy, ws,
                                                     True)
    _close_np(no_cy[1], lstm_backward_ref(ghy, zero, cx, cy.numpy(), ws.numpy())[1])


@pytest.mark.parametrize("b,h", CELL_SHAPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("bias", [False, True])
def test_fused_gru_cell_matches_numpy(b, h, layout, bias):
    rng = np.random.default_rng(b * 10 + h + 1)
    ig, hg = 2 * rng.standard_normal((b, 3 * h)), 2 * rng.standard_normal((b, 3 * h))
    hx = rng.standard_normal((b, h))
    bi, bh = (rng.standard_normal(3 * h), rng.standard_normal(3 * h)) if bias else (None, None)
    args = [_layout(a, layout) if a is not None else None for a in (ig, hg, hx, bi, bh)]
    hy, ws = aten._thnn_fused_gru_cell(*args)
    for t, ref in zip((hy, ws), gru_ref(ig, hg, hx, bi, bh)):
        _close_np(t, ref)
    ghy = rng.standard_normal((b, h))
    out = aten._thnn_fused_gru_cell_backward(_layout(ghy, layout), ws, bias)
    refs = gru_backward_ref(ghy, ws.numpy())
    for t, ref in zip(out, refs if bias else refs[:3]):
        _close_np(t, ref)
    assert (out[3] is None) == (not bias)


@pytest.mark.parametrize("capability", ["native", "default"])
def test_fused_cells_float32(capability):
    """float32 (the AVX2 nonlinearities, or the portable ones under
    PTL_CPU_CAPABILITY=default in a child process) against the float64 reference."""
    code = (
        "import sys\nimport numpy as np, pytorchlite as ptl\n"
        "rng = np.random.default_rng(0)\n"
        "a = [3 * rng.standard_normal(s) for s in [(5, 44), (5, 44), (5, 11), (44,), (44,)]]\n"
        "t = [ptl.from_numpy(x.astype(np.float32)) for x in a]\n"
        "hy, cy, ws = ptl.ops.aten._thnn_fused_lstm_cell(*t)\n"
        "g = [ptl.from_numpy(x[:, :33].astype(np.float32)) for x in a[:2]]\n"
        "gh, gws = ptl.ops.aten._thnn_fused_gru_cell(g[0], g[1], t[2])\n"
        "bw = ptl.ops.aten._thnn_fused_lstm_cell_backward_impl(t[2], t[2], t[2], cy, ws, True)\n"
        "np.savez(sys.argv[1], hy=hy.numpy(), cy=cy.numpy(), ws=ws.numpy(),\n"
        "         gh=gh.numpy(), bw=bw[0].numpy(), dt=str(hy.dtype))\n")
    env = dict(os.environ)
    if capability == "default":
        env["PTL_CPU_CAPABILITY"] = "default"
    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/out.npz"
        subprocess.run([sys.executable, "-c", code, path], check=True, env=env, cwd=ROOT)
        r = dict(np.load(path))
    rng = np.random.default_rng(0)
    a = [3 * rng.standard_normal(s) for s in [(5, 44), (5, 44), (5, 11), (44,), (44,)]]
    a = [x.astype(np.float32).astype(np.float64) for x in a]
    hy, cy, ws = lstm_ref(*a)
    assert r["dt"] == "torch.float32" or r["dt"].endswith("float32")
    for name, ref in (("hy", hy), ("cy", cy), ("ws", ws)):
        np.testing.assert_allclose(r[name], ref, rtol=2e-6, atol=2e-6, err_msg=name)
    np.testing.assert_allclose(r["gh"], gru_ref(a[0][:, :33], a[1][:, :33], a[2])[0],
                               rtol=2e-6, atol=2e-6)
    bw = lstm_backward_ref(a[2], a[2], a[2], r["cy"].astype(np.float64), r["ws"].astype(np.float64))
    np.testing.assert_allclose(r["bw"], bw[0], rtol=1e-5, atol=1e-5)


# ---- gradients ----

def _req(a):
    return ptl.from_numpy(a).requires_grad_()


def _lstm_inputs(b, h, bias, layout="contiguous", seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((b, 4 * h)), rng.standard_normal((b, 4 * h)),
              rng.standard_normal((b, h))]
    if bias:
        arrays += [rng.standard_normal(4 * h), rng.standard_normal(4 * h)]
    return [_layout(a, layout).requires_grad_() for a in arrays]


def _gru_inputs(b, h, bias, layout="contiguous", seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((b, 3 * h)), rng.standard_normal((b, 3 * h)),
              rng.standard_normal((b, h))]
    if bias:
        arrays += [rng.standard_normal(3 * h), rng.standard_normal(3 * h)]
    return [_layout(a, layout).requires_grad_() for a in arrays]


def lstm_both(*a):
    return aten._thnn_fused_lstm_cell(*a)[:2]


def lstm_hy(*a):
    return aten._thnn_fused_lstm_cell(*a)[0]


def lstm_cy(*a):
    return aten._thnn_fused_lstm_cell(*a)[1]


def gru_hy(*a):
    return aten._thnn_fused_gru_cell(*a)[0]


# name (a derivatives.def row), function, inputs
GRADCHECKS = [
    ("_thnn_fused_lstm_cell", lstm_both, lambda: _lstm_inputs(3, 2, True)),
    ("_thnn_fused_lstm_cell", lstm_hy, lambda: _lstm_inputs(2, 3, False, "transposed")),
    ("_thnn_fused_lstm_cell", lstm_cy, lambda: _lstm_inputs(2, 2, True, "sliced")),
    ("_thnn_fused_gru_cell", gru_hy, lambda: _gru_inputs(3, 2, True)),
    ("_thnn_fused_gru_cell", gru_hy, lambda: _gru_inputs(2, 3, False, "sliced")),
    ("_thnn_fused_gru_cell", gru_hy, lambda: _gru_inputs(2, 2, True, "transposed")),
]


@pytest.mark.parametrize("k", range(len(GRADCHECKS)))
def test_gradcheck(k):
    _, fn, inputs = GRADCHECKS[k]
    assert ptl.autograd.gradcheck(fn, tuple(inputs()))


@pytest.mark.parametrize("k", [0, 1, 3, 4])
def test_gradgradcheck(k):
    _, fn, inputs = GRADCHECKS[k]
    assert ptl.autograd.gradgradcheck(fn, tuple(inputs()))


def test_broadcast_bias_is_refused():
    """The cells take exactly [B, G] gates and [G] biases (no broadcasting), as in PyTorch."""
    ig, hg, cx, bi, bh = _lstm_inputs(2, 2, True)
    with pytest.raises(RuntimeError, match="Expected 1-dimensional tensor"):
        aten._thnn_fused_lstm_cell(ig, hg, cx, bi.unsqueeze(0), bh.unsqueeze(0))


def _section_rows(path):
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    start = text.index("/* ---- rnn.c ---- */") + 1
    end = text.find("/* ----", start)
    return re.findall(r"^PTL_(?:GRAD|OP)\((\w+),", text[start:end if end >= 0 else None], re.M)


def test_every_row_has_a_gradcheck():
    rows = _section_rows("src/autograd/derivatives.def")
    assert rows == ["_thnn_fused_lstm_cell", "_thnn_fused_gru_cell"]
    names = {g[0] for g in GRADCHECKS}
    assert set(rows) <= names


def test_every_op_is_tested_here():
    source = inspect.getsource(sys.modules[__name__])
    for op in _section_rows("src/aten/ops.def"):
        assert f"aten.{op}(" in source, op


def test_node_names_and_grad_mode_paths():
    ig, hg, cx, bi, bh = _lstm_inputs(2, 3, True)
    hy, cy, ws = aten._thnn_fused_lstm_cell(ig, hg, cx, bi, bh)
    assert hy.grad_fn.name() == "ThnnFusedLstmCellBackward0"
    g = aten._thnn_fused_gru_cell(*_gru_inputs(2, 3, True))[0]
    assert g.grad_fn.name() == "ThnnFusedGruCellBackward0"
    # the fused backward kernel (no create_graph) and the op formulas (create_graph) agree
    w = ptl.from_numpy(np.random.default_rng(1).standard_normal((2, 3)))
    loss = (hy * w).sum() + (cy * w * 2).sum()
    fast = ptl.autograd.grad(loss, (ig, hg, cx, bi, bh), retain_graph=True)
    slow = ptl.autograd.grad(loss, (ig, hg, cx, bi, bh), create_graph=True)
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_lstm_and_gru_cells_match_torch_composition():
    """The cells' values and every input's gradient against torch's autograd of the same
    composition (PyTorch's CPU build has no fused cell to call)."""
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((3, 8)), rng.standard_normal((3, 8)), rng.standard_normal((3, 2)),
              rng.standard_normal(8), rng.standard_normal(8)]
    # ties: equal gates and a zero state
    arrays[0][0] = arrays[1][0]
    arrays[2][1] = 0.0
    @functools.cache
    def torch_lstm():
        tt = [torch.tensor(a, requires_grad=True) for a in arrays]
        ti, tf, tg, to = (tt[0] + tt[1] + tt[3] + tt[4]).chunk(4, 1)
        tcy = torch.sigmoid(tf) * tt[2] + torch.sigmoid(ti) * torch.tanh(tg)
        thy = torch.sigmoid(to) * torch.tanh(tcy)
        (thy.sum() + (tcy * 3).sum()).backward()
        return [thy, tcy] + [x.grad for x in tt]
    pt = [ptl.from_numpy(a).requires_grad_() for a in arrays]
    hy, cy, _ = aten._thnn_fused_lstm_cell(*pt)
    (hy.sum() + (cy * 3).sum()).backward()
    for k, p in enumerate([hy, cy] + [x.grad for x in pt]):
        _close(p, lambda: torch_lstm()[k], "lstm cell")
    g = [a[:, :6] if a.ndim == 2 else a[:6] for a in arrays[:2]] + [arrays[2]] + \
        [a[:6] for a in arrays[3:]]
    @functools.cache
    def torch_gru():
        tt = [torch.tensor(a, requires_grad=True) for a in g]
        xr, xz, xn = (tt[0] + tt[3]).chunk(3, 1)
        hr, hz, hn = (tt[1] + tt[4]).chunk(3, 1)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        thy = (tt[2] - n) * z + n
        thy.sum().backward()
        return [thy] + [x.grad for x in tt]
    pt = [ptl.from_numpy(np.ascontiguousarray(a)).requires_grad_() for a in g]
    hy = aten._thnn_fused_gru_cell(*pt)[0]
    hy.sum().backward()
    for k, p in enumerate([hy] + [x.grad for x in pt]):
        _close(p, lambda: torch_gru()[k], "gru cell")


@pytest.mark.parametrize("op", ["lstm", "gru"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("bias", [False, True])
def test_fused_cells_match_their_composite_of_ops(op, layout, bias):
    """The fused kernels against the composites of ops that nn.LSTM / GRU run for the dtypes
    the kernels do not take (nn/modules/rnn.py): values and every input's gradient, float64."""
    from pytorchlite.nn.modules.rnn import _gru_cell_ops, _lstm_cell_ops
    make = _lstm_inputs if op == "lstm" else _gru_inputs
    fused = lstm_both if op == "lstm" else gru_hy
    composite = _lstm_cell_ops if op == "lstm" else _gru_cell_ops
    results = []
    for fn in (fused, composite):
        inputs = make(4, 9, bias, layout, seed=3)
        out = fn(*inputs)
        outs = out if isinstance(out, tuple) else (out,)
        w = ptl.from_numpy(np.random.default_rng(4).standard_normal((4, 9)))
        sum((o * w * (k + 1)).sum() for k, o in enumerate(outs)).backward()
        results.append([o.detach() for o in outs] + [x.grad for x in inputs])
    for a, b in zip(*results):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


# ---- errors ----

def _cell_args(op, b=2, h=3, dtype=np.float64):
    k = 4 if op == "lstm" else 3
    return [np.zeros((b, k * h), dtype), np.zeros((b, k * h), dtype), np.zeros((b, h), dtype),
            np.zeros(k * h, dtype), np.zeros(k * h, dtype)]


def _call(op, arrays):
    fn = aten._thnn_fused_lstm_cell if op == "lstm" else aten._thnn_fused_gru_cell
    return fn(*[ptl.from_numpy(a) if a is not None else None for a in arrays])


@pytest.mark.parametrize("op", ["lstm", "gru"])
def test_cell_errors(op):
    name = "_thnn_fused_lstm_cell" if op == "lstm" else "_thnn_fused_gru_cell"
    state = "cx" if op == "lstm" else "hx"
    k = 4 if op == "lstm" else 3
    a = _cell_args(op)
    cases = [
        ([a[0][None]] + a[1:], f"Expected 2-dimensional tensor, but got 3-dimensional tensor for "
         f"argument #1 'input_gates' (while checking arguments for {name})"),
        ([a[0], a[1][:, :-1]] + a[2:], f"Expected tensor for argument #1 'input_gates' to have "
         f"same size as tensor for argument #2 'hidden_gates'; but [2, {3 * k}] does not equal "
         f"[2, {3 * k - 1}] (while checking arguments for {name})"),
        (a[:3] + [a[3][:-1], a[4]], f"Expected tensor for argument #4 'input_bias' to have "
         f"{3 * k} elements; but it actually has {3 * k - 1} elements (while checking arguments "
         f"for {name})"),
        (a[:3] + [a[3], a[4][None]], f"Expected tensor for argument #4 'input_bias' to have same "
         f"size as tensor for argument #5 'hidden_bias'; but [{3 * k}] does not equal "
         f"[1, {3 * k}] (while checking arguments for {name})"),
        (a[:2] + [a[2][:, :2]] + a[3:], f"Expected tensor for argument #3 '{state}' to have 6 "
         f"elements; but it actually has 4 elements (while checking arguments for {name})"),
        (a[:2] + [a[2].ravel()] + a[3:], f"Expected 2-dimensional tensor, but got 1-dimensional "
         f"tensor for argument #3 '{state}' (while checking arguments for {name})"),
        (a[:3] + [a[3], None], f"{name}: input_bias and hidden_bias must be given together"),
        ([a[0][:, :-1], a[1][:, :-1]] + a[2:], f"{name}: the gates' size {3 * k - 1} is not a "
         f"multiple of {k}"),
        (a[:2] + [a[2].astype(np.float32)] + a[3:], "expected scalar type Double but found Float"),
    ]
    for args, msg in cases:
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            _call(op, args)
    for dt, legacy in ((np.float16, "Half"), (np.int64, "Long")):
        with pytest.raises(NotImplementedError,
                           match=re.escape(f'"{name}_cpu" not implemented for '
                                                         f"'{legacy}'")):
            _call(op, _cell_args(op, dtype=dt))


def test_backward_kernel_errors():
    z = ptl.zeros(2, 3, dtype=ptl.float64)
    with pytest.raises(RuntimeError, match=re.escape(
            "_thnn_fused_lstm_cell_backward_impl: workspace must have size [2, 12]")):
        aten._thnn_fused_lstm_cell_backward_impl(z, z, z, z, ptl.zeros(2, 11, dtype=ptl.float64),
                                                 True)
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected tensor for argument #1 'grad_hy' to have same size as tensor for argument "
            "#3 'cx'; but [2, 2] does not equal [2, 3]")):
        aten._thnn_fused_lstm_cell_backward_impl(z[:, :2], z, z, z,
                                                 ptl.zeros(2, 12, dtype=ptl.float64), True)
    with pytest.raises(RuntimeError, match=re.escape(
            "_thnn_fused_gru_cell_backward: workspace must have size [2, 15]")):
        aten._thnn_fused_gru_cell_backward(z, ptl.zeros(2, 12, dtype=ptl.float64), True)
    with pytest.raises(NotImplementedError, match=re.escape(
            "\"_thnn_fused_gru_cell_backward_cpu\" not implemented for 'Int'")):
        aten._thnn_fused_gru_cell_backward(z.int(), ptl.zeros(2, 15, dtype=ptl.int32), True)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("dtype,tol", [("float16", 3e-3), ("bfloat16", 2e-2)])
def test_half_dtypes_compose_the_cell_of_ops(name, dtype, tol):
    """The fused cells take float32 / float64; other dtypes run the cell composed of ops."""
    dt = getattr(ptl, dtype)
    m = getattr(ptl.nn, name)(3, 4, num_layers=2, dtype=dt)
    m64 = getattr(ptl.nn, name)(3, 4, num_layers=2, dtype=ptl.float64)
    m64.load_state_dict({k: v.double() for k, v in m.state_dict().items()})
    x = ptl.from_numpy(randn(5, 2, 3)).to(dt)
    out = m(x)[0]
    assert out.dtype == dt
    np.testing.assert_allclose(out.double().detach().numpy(),
                               m64(x.double())[0].detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["lstm", "gru"])
def test_leaf_gradients_are_not_shared(op):
    """One gradient going to two leaves (LSTM's gates and biases) reaches them as two
    buffers: a second backward accumulates into each once."""
    make = _lstm_inputs if op == "lstm" else _gru_inputs
    fn = lstm_hy if op == "lstm" else gru_hy
    leaves = make(2, 3, True)
    fn(*leaves).sum().backward()
    first = [x.grad.numpy().copy() for x in leaves]
    fn(*leaves).sum().backward()
    for x, g in zip(leaves, first):
        np.testing.assert_allclose(x.grad.numpy(), 2 * g, rtol=1e-14, atol=1e-14)
