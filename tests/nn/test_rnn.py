"""The recurrent modules: nn.RNN / LSTM / GRU against torch (live, or its stored answers
without it: tests/golden.py) in float64 on
sequences longer than autograd's 64-input limit, packed input, every option, the fused
cell ops with their derivative formulas (gradcheck / gradgradcheck), and the layer op that
runs a layer's time loop (aten::_ptl_rnn_layer) against NumPy and the loop of ops it
replaces, with its backward (gradcheck)."""
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


# every tail of the float32 LSTM rows' vectors (8 lanes on AVX2, 16 on AVX-512) and whole
# vectors of both, with and without biases, in a child process per capability
LSTM_ROW_HIDDEN = list(range(1, 41)) + [128]
LSTM_ROWS_SCRIPT = """
import sys
import numpy as np, pytorchlite as ptl
aten = ptl.ops.aten
out = {}
for h in %r:
    rng = np.random.default_rng(h)
    a = [(3 * rng.standard_normal(s)).astype(np.float32)
         for s in [(3, 4 * h), (3, 4 * h), (3, h), (4 * h,), (4 * h,), (3, h), (3, h)]]
    t = [ptl.from_numpy(x) for x in a]
    for bias in (0, 1):
        b = t[3:5] if bias else (None, None)
        hy, cy, ws = aten._thnn_fused_lstm_cell(t[0], t[1], t[2], *b)
        for name, r in (("hy", hy), ("cy", cy), ("ws", ws)):
            out[f"{h} {bias} {name}"] = r.numpy()
        for k, (ghy, gcy) in enumerate([(t[5], t[6]), (None, t[6]), (t[5], None)]):
            gg, gcx, _ = aten._thnn_fused_lstm_cell_backward_impl(ghy, gcy, t[2], cy, ws, False)
            out[f"{h} {bias} gg{k}"], out[f"{h} {bias} gcx{k}"] = gg.numpy(), gcx.numpy()
np.savez(sys.argv[1], **out)
""" % (LSTM_ROW_HIDDEN,)


def _lstm_rows(capability, path):
    env = dict(os.environ)
    if capability is not None:
        env["PTL_CPU_CAPABILITY"] = capability
    subprocess.run([sys.executable, "-c", LSTM_ROWS_SCRIPT, str(path)], check=True, env=env,
                   cwd=ROOT)
    return dict(np.load(path))


def test_fused_lstm_rows_float32_every_tail(tmp_path):
    """The float32 LSTM cell runs each row as vectors of every gate at once (native/rnn_rows.c,
    DEFINE_LSTM_VEC_ROWS): at every hidden size from 1 to 40 and 128 the AVX2 and the
    AVX-512 forms give the same bits, forward and backward (without grad_hy or grad_cy too),
    and both, like the portable rows, agree with the float64 reference.  Tolerances: each
    gate is one vec_math sigmoid or tanh of a float32 sum (a few ulp), cy and hy add two
    roundings, and each gate's gradient is a product of five such factors: 2e-6 forward,
    1e-5 backward (relative to values of order 1), as test_fused_cells_float32."""
    native = _lstm_rows(None, tmp_path / "native.npz")
    runs = {"native": native, "default": _lstm_rows("default", tmp_path / "default.npz")}
    if ptl.backends.cpu.get_cpu_capability() == "AVX512":
        avx2 = _lstm_rows("avx2", tmp_path / "avx2.npz")
        for key in native:
            np.testing.assert_array_equal(native[key], avx2[key], err_msg=key)
    for run in runs.values():
        for h in LSTM_ROW_HIDDEN:
            rng = np.random.default_rng(h)
            a = [(3 * rng.standard_normal(s)).astype(np.float32).astype(np.float64)
                 for s in [(3, 4 * h), (3, 4 * h), (3, h), (4 * h,), (4 * h,), (3, h), (3, h)]]
            zero = np.zeros((3, h))
            for bias in (0, 1):
                hy, cy, ws = lstm_ref(a[0], a[1], a[2], *(a[3:5] if bias else (None, None)))
                for name, ref in (("hy", hy), ("cy", cy), ("ws", ws)):
                    np.testing.assert_allclose(run[f"{h} {bias} {name}"], ref, rtol=2e-6,
                                               atol=2e-6, err_msg=f"{h} {bias} {name}")
                cyr, wsr = (run[f"{h} {bias} {n}"].astype(np.float64) for n in ("cy", "ws"))
                for k, (ghy, gcy) in enumerate([(a[5], a[6]), (zero, a[6]), (a[5], zero)]):
                    gg, gcx, _ = lstm_backward_ref(ghy, gcy, a[2], cyr, wsr)
                    for name, ref in ((f"gg{k}", gg), (f"gcx{k}", gcx)):
                        np.testing.assert_allclose(run[f"{h} {bias} {name}"], ref, rtol=1e-5,
                                                   atol=1e-5, err_msg=f"{h} {bias} {name}")


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
    assert rows == ["_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "_ptl_rnn_layer"]
    names = {g[0] for g in GRADCHECKS} | {"_ptl_rnn_layer"}   # test_layer_gradcheck
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


# ---- the recurrent layer op: aten::_ptl_rnn_layer and its backward ----

LAYER_MODES = {"RNN_RELU": 0, "RNN_TANH": 1, "LSTM": 2, "GRU": 3}
LAYER_GATES = {"RNN_RELU": 1, "RNN_TANH": 1, "LSTM": 4, "GRU": 3}
# (mode, proj_size)
LAYER_KINDS = [("LSTM", 0), ("LSTM", 2), ("GRU", 0), ("RNN_TANH", 0), ("RNN_RELU", 0)]
# (T, B, H, batch_sizes of a packed sequence): odd T, T = 1 and 0, B = 1, H not a multiple
# of 8 lanes, an empty batch
LAYER_SHAPES = [(5, 3, 5, [3, 3, 2, 1, 1]), (1, 1, 9, [1]), (0, 2, 3, []), (2, 0, 3, [0, 0])]


def _layer_arrays(mode, T, B, H, proj=0, bias=True, seed=0, I=3):
    """x [T, B, I], the states and the weights of one layer and direction, in float64."""
    rng = np.random.default_rng(seed)
    G, P = LAYER_GATES[mode] * H, proj or H

    def u(*shape):
        return rng.uniform(-0.7, 0.7, shape)
    return {"x": rng.standard_normal((T, B, I)), "hx": rng.standard_normal((B, P)),
            "cx": rng.standard_normal((B, H)) if mode == "LSTM" else None,
            "w_ih": u(G, I), "w_hh": u(G, P), "b_ih": u(G) if bias else None,
            "b_hh": u(G) if bias else None, "w_hr": u(P, H) if proj else None}


def layer_ref(mode, gates, hx, cx, w_hh, b_ih, b_hh, w_hr, reverse, batch_sizes=None):
    """NumPy float64 (output, hy, cy) of one layer and direction: gates [T, B, G] = x W_ih^T;
    at step t only the batch_sizes[t] leading rows run, the others keep their state."""
    T, B, G = gates.shape
    H = G // LAYER_GATES[mode]
    bias = 0 if b_ih is None else b_ih + b_hh
    h, c = hx.copy(), None if cx is None else cx.copy()
    out = np.zeros((T, B, hx.shape[1]))
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        n = B if batch_sizes is None else batch_sizes[t]
        hg = h @ w_hh.T
        if mode == "LSTM":
            g = gates[t] + hg + bias
            i, f, o = _sig(g[:, :H]), _sig(g[:, H:2 * H]), _sig(g[:, 3 * H:])
            c_new = f * c + i * np.tanh(g[:, 2 * H:3 * H])
            h_new = o * np.tanh(c_new)
            h_new = h_new if w_hr is None else h_new @ w_hr.T
            c[:n] = c_new[:n]
        elif mode == "GRU":
            xg, hg = gates[t] + (0 if b_ih is None else b_ih), hg + (0 if b_hh is None else b_hh)
            r = _sig(xg[:, :H] + hg[:, :H])
            z = _sig(xg[:, H:2 * H] + hg[:, H:2 * H])
            nn = np.tanh(xg[:, 2 * H:] + r * hg[:, 2 * H:])
            h_new = nn + z * (h - nn)
        else:
            a = gates[t] + hg + bias
            h_new = np.maximum(a, 0) if mode == "RNN_RELU" else np.tanh(a)
        h[:n] = h_new[:n]
        out[t] = h
    return out, h, c


def _as(a, dtype, grad=False):
    if a is None:
        return None
    t = ptl.from_numpy(np.array(a)).to(dtype)
    return t.requires_grad_() if grad else t


@pytest.mark.parametrize("mode,proj", LAYER_KINDS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("dtype,tol", [(ptl.float64, 1e-12), (ptl.float32, 2e-5)])
def test_layer_op_matches_numpy(mode, proj, reverse, packed, dtype, tol):
    """The forward against NumPy in float64 (float32 inputs rounded first), on every shape."""
    for k, (T, B, H, sizes) in enumerate(LAYER_SHAPES):
        a = _layer_arrays(mode, T, B, H, proj, bias=k != 1, seed=k)
        gates = a["x"] @ a["w_ih"].T
        if dtype == ptl.float32:   # the float32 inputs, exactly
            a = {n: None if v is None else v.astype(np.float32).astype(np.float64)
                 for n, v in a.items()}
            gates = gates.astype(np.float32).astype(np.float64)
        bs = sizes if packed else None
        args = [_as(gates, dtype)] + [_as(a[n], dtype) for n in
                                      ("hx", "cx", "w_hh", "b_ih", "b_hh", "w_hr")]
        sizes_t = None if bs is None else ptl.tensor(bs, dtype=ptl.int64)
        out, ws, hy, cy = aten._ptl_rnn_layer(*args, LAYER_MODES[mode], reverse, sizes_t)
        ref = layer_ref(mode, gates, a["hx"], a["cx"], a["w_hh"], a["b_ih"], a["b_hh"],
                        a["w_hr"], reverse, bs)
        for got, want, what in ((out, ref[0], "output"), (hy, ref[1], "hy"), (cy, ref[2], "cy")):
            if want is None:
                assert got is None, what
                continue
            assert got.dtype == dtype, what
            np.testing.assert_allclose(got.double().numpy(), want, rtol=tol, atol=tol,
                                       err_msg=f"{what} {T, B, H}")
        assert ws.dim() == 1 and ws.dtype == dtype


def _layer_results(run, mode, a, dtype, reverse, batch_sizes, seed=0):
    """Outputs and the gradients of x, the states and every weight after a weighted sum of
    (output, hy, cy) goes back through run (_run_direction or _run_direction_ops)."""
    from pytorchlite.nn.modules import rnn
    t = {n: _as(v, dtype, grad=True) for n, v in a.items()}
    state = (t["hx"], t["cx"]) if mode == "LSTM" else t["hx"]
    weights = tuple(t[n] for n in ("w_ih", "w_hh", "b_ih", "b_hh", "w_hr"))
    if run is rnn._run_direction_ops:
        keep = None if batch_sizes is None else rnn._keep_masks(batch_sizes, a["x"].shape[1])
        out, state = run(mode, t["x"], state, weights, reverse, keep)
    else:
        out, state = run(mode, t["x"], state, weights, reverse, batch_sizes)
    outs = [out] + (list(state) if mode == "LSTM" else [state])
    rng = np.random.default_rng(seed)
    loss = sum((o * _as(rng.standard_normal(tuple(o.shape)), dtype)).sum() for o in outs)
    leaves = [v for v in t.values() if v is not None]
    grads = ptl.autograd.grad(loss, leaves, allow_unused=True) if loss.requires_grad else \
        [None] * len(leaves)
    names = [n for n, v in t.items() if v is not None]
    res = {f"out{k}": o.detach() for k, o in enumerate(outs)}
    res.update({f"grad {n}": g for n, g in zip(names, grads)})
    return res


def _assert_results_close(got, want, tol):
    assert got.keys() == want.keys()
    for name in want:
        a, b = got[name], want[name]
        if b is None:   # no path from the loss (T = 0: x and the input weights)
            assert a is None or not a.abs().sum().item(), name
            continue
        a = a.double().numpy()
        b = b.double().numpy()
        scale = max(1.0, float(np.abs(b).max()) if b.size else 1.0)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale, err_msg=name)


def _one_and_two_threads(mode, a, dtype, reverse, batch_sizes, tol):
    """The layer op's results on one thread, checked: the same bits on two threads (rows
    never straddle a task) and close to nn/modules/rnn.py's loop of ops."""
    from pytorchlite.nn.modules import rnn
    saved = ptl.get_num_threads()
    try:
        runs = []
        for nt in (1, 2):
            ptl.set_num_threads(nt)
            runs.append(_layer_results(rnn._run_direction, mode, a, dtype, reverse,
                                       batch_sizes))
        want = _layer_results(rnn._run_direction_ops, mode, a, dtype, reverse, batch_sizes)
    finally:
        ptl.set_num_threads(saved)
    for name in runs[0]:
        np.testing.assert_array_equal(runs[0][name].numpy(), runs[1][name].numpy(),
                                      err_msg=name)
    _assert_results_close(runs[0], want, tol)
    return runs[0]


@pytest.mark.parametrize("mode,proj", LAYER_KINDS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("dtype,tol", [(ptl.float64, 1e-12), (ptl.float32, 2e-5)])
def test_layer_op_matches_loop_of_ops(mode, proj, reverse, packed, dtype, tol):
    """Values and every gradient (x, h0, c0, W_ih, W_hh, both biases, W_hr) of the op
    against nn/modules/rnn.py's loop of ops, which it replaces in float32 / float64."""
    from pytorchlite.nn.modules import rnn
    for k, (T, B, H, sizes) in enumerate(LAYER_SHAPES):
        a = _layer_arrays(mode, T, B, H, proj, bias=k != 1, seed=k)
        bs = ptl.tensor(sizes, dtype=ptl.int64) if packed else None
        got = _layer_results(rnn._run_direction, mode, a, dtype, reverse, bs)
        want = _layer_results(rnn._run_direction_ops, mode, a, dtype, reverse, bs)
        _assert_results_close(got, want, tol)


def test_layer_op_any_running_rows():
    """batch_sizes need not shrink: rows stop and start again, every row keeps its state
    while it does not run (what _run_direction_ops's keep masks say)."""
    from pytorchlite.nn.modules import rnn
    for mode, proj in LAYER_KINDS:
        a = _layer_arrays(mode, 5, 3, 4, proj, seed=9)
        bs = ptl.tensor([3, 1, 2, 0, 3])
        for reverse in (False, True):
            got = _layer_results(rnn._run_direction, mode, a, ptl.float64, reverse, bs, seed=1)
            want = _layer_results(rnn._run_direction_ops, mode, a, ptl.float64, reverse, bs,
                                  seed=1)
            _assert_results_close(got, want, 1e-12)


MODULE_CASES = [
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 3, "batch_first": True}),
    ("LSTM", {"num_layers": 2, "proj_size": 2, "bidirectional": True, "batch_first": True}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "bias": False}),
    ("GRU", {"batch_first": True}),
    ("RNN", {"num_layers": 2, "bidirectional": True}),
    ("RNN", {"nonlinearity": "relu", "batch_first": True, "num_layers": 2}),
]


def _module_run(m, x, packed_lengths, hx, dtype):
    """(outputs, grads of x, h0 (c0) and every parameter) of m on x (or packed x)."""
    px = _as(x, dtype, grad=True)
    h0 = [_as(h, dtype, grad=True) for h in hx]
    inp = px
    if packed_lengths is not None:
        inp = ptl.nn.utils.rnn.pack_padded_sequence(px, ptl.tensor(packed_lengths),
                                                    batch_first=m.batch_first,
                                                    enforce_sorted=False)
    out, h = m(inp, tuple(h0) if len(h0) == 2 else h0[0])
    out = out.data if packed_lengths is not None else out
    outs = [out] + (list(h) if isinstance(h, tuple) else [h])
    rng = np.random.default_rng(3)
    sum((o * _as(rng.standard_normal(tuple(o.shape)), dtype)).sum() for o in outs).backward()
    res = {f"out{k}": o.detach() for k, o in enumerate(outs)}
    res.update({"grad x": px.grad, **{f"grad h0 {k}": h.grad for k, h in enumerate(h0)}})
    res.update({f"grad {n}": p.grad for n, p in m.named_parameters()})
    return res


@pytest.mark.parametrize("name,kwargs", MODULE_CASES)
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("dtype,tol", [(ptl.float64, 1e-12), (ptl.float32, 3e-5)])
def test_modules_match_loop_of_ops(monkeypatch, name, kwargs, packed, dtype, tol):
    """nn.LSTM / GRU / RNN through the layer op against the same modules through the loop of
    ops: 1 and 2 layers, both directions, batch_first, packed sequences of unequal lengths
    (an odd longest one), a given initial state; values and every gradient."""
    from pytorchlite.nn.modules import rnn
    m = getattr(ptl.nn, name)(3, 5, dtype=dtype, **kwargs)
    T, B = 7, 4
    x = randn(B, T, 3, seed=2) if kwargs.get("batch_first") else randn(T, B, 3, seed=2)
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    hx = [randn(layers, B, kwargs.get("proj_size") or 5, seed=3)]
    if name == "LSTM":
        hx.append(randn(layers, B, 5, seed=4))
    lengths = [5, 7, 1, 3] if packed else None
    got = _module_run(m, x, lengths, hx, dtype)
    monkeypatch.setattr(rnn, "_LAYER_DTYPES", ())
    want = _module_run(m, x, lengths, hx, dtype)
    _assert_results_close(got, want, tol)


@pytest.mark.torch_ref
@pytest.mark.parametrize("name,kwargs", MODULE_CASES[:1] + MODULE_CASES[3:4] + MODULE_CASES[5:6])
def test_float32_modules_match_torch(name, kwargs):
    """float32, packed sequences of unequal lengths: against torch's float32 modules."""
    ours = getattr(ptl.nn, name)(3, 5, **kwargs)
    theirs = getattr(torch.nn, name)(3, 5, **kwargs)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                            for k, v in ours.state_dict().items()})
    x = randn(7, 4, 3, seed=2).astype(np.float32)
    res = []
    for lib, m in ((ptl, ours), (torch, theirs)):
        px = lib.from_numpy(x.copy()).requires_grad_()
        packed = lib.nn.utils.rnn.pack_padded_sequence(px, lib.tensor([5, 7, 1, 3]),
                                                       enforce_sorted=False)
        out, h = m(packed)
        hs = list(h) if isinstance(h, tuple) else [h]
        (out.data.sum() + sum((t * 2).sum() for t in hs)).backward()
        res.append([out.data, *hs, px.grad] + [p.grad for p in m.parameters()])
    for a, b in zip(*res):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)


def _layer_fn(mode, reverse, batch_sizes):
    def f(ig, hx, cx, w_hh, b_ih, b_hh, w_hr):
        out, _, hy, cy = aten._ptl_rnn_layer(ig, hx, cx, w_hh, b_ih, b_hh, w_hr,
                                             LAYER_MODES[mode], reverse, batch_sizes)
        return (out, hy) if cy is None else (out, hy, cy)
    return f


@pytest.mark.parametrize("mode,proj", LAYER_KINDS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("packed", [False, True])
def test_layer_gradcheck(mode, proj, reverse, packed):
    T, B, H = 3, 2, 2
    a = _layer_arrays(mode, T, B, H, proj, seed=5)
    rng = np.random.default_rng(6)
    gates = rng.standard_normal((T, B, LAYER_GATES[mode] * H))
    args = [_as(gates, ptl.float64, True)] + [_as(a[n], ptl.float64, True) for n in
                                              ("hx", "cx", "w_hh", "b_ih", "b_hh", "w_hr")]
    bs = ptl.tensor([2, 1, 1]) if packed else None
    assert ptl.autograd.gradcheck(_layer_fn(mode, reverse, bs), tuple(args))


def test_layer_node_and_double_backward():
    """The node is PtlRnnLayerBackward0; under create_graph the backward kernel records a
    node without a derivative, so a second backward raises (as PyTorch's cuDNN RNN)."""
    a = _layer_arrays("GRU", 3, 2, 2, seed=7)
    args = [_as(np.ones((3, 2, 6)), ptl.float64, True)] + [
        _as(a[n], ptl.float64, True) for n in ("hx", "cx", "w_hh", "b_ih", "b_hh", "w_hr")]
    out = _layer_fn("GRU", False, None)(*args)[0]
    assert out.grad_fn.name() == "PtlRnnLayerBackward0"
    m = ptl.nn.LSTM(2, 3, dtype=ptl.float64)
    x = ptl.from_numpy(randn(4, 2, 2)).requires_grad_()
    g, = ptl.autograd.grad(m(x)[0].sum(), x, create_graph=True)
    with pytest.raises(NotImplementedError, match=re.escape(
            "the derivative for 'aten::_ptl_rnn_layer_backward' is not implemented.")):
        g.sum().backward()


def test_layer_leaves_no_live_objects():
    """Forward and backward (packed, with proj_size, a double backward refused) and a refused
    call leave pytorchlite's live tensor and node counts where they were."""
    from helpers import assert_no_leak
    m = ptl.nn.LSTM(3, 4, proj_size=2, bidirectional=True, dtype=ptl.float64)
    x = ptl.from_numpy(randn(5, 3, 3)).requires_grad_()

    def run():
        packed = ptl.nn.utils.rnn.pack_padded_sequence(x, ptl.tensor([5, 2, 4]),
                                                       enforce_sorted=False)
        out, (h, c) = m(packed)
        (out.data.sum() + h.sum() + c.sum()).backward()
        g, = ptl.autograd.grad(m(x)[0].sum(), x, create_graph=True)
        with pytest.raises(NotImplementedError):
            g.sum().backward()
        with pytest.raises(RuntimeError):
            _call_layer(_layer_args(), batch_sizes=ptl.tensor([3, 4]))
    assert_no_leak(run, times=5)


# (mode, proj, B, H) at T = 3: B across gemm.c's engine limits (Note [GEMM packing of B]:
# B read in place by at most 64 rows on AVX2, 24 on AVX-512; MC: 72 float64 / 144 float32
# rows a block on AVX2, 96 / 192 on AVX-512), and steps whose cell rows split between two
# threads (rnn.c row_grain: GRAIN / width + 1 rows a task, a split from twice that: LSTM H 64
# -> 258 rows, GRU H 64 -> 206, RNN H 600 -> 110).  The step GEMMs on the packed W_hh
# (gemm.c ptl_gemm_packed): K in one block up to 320 and in equal blocks past it (forward
# K = H, backward K = G: LSTM H 80 -> 320, H 81 -> 324, RNN H 330 -> 330 both ways), and
# their columns split between two threads from 2^22 multiply-adds where the rows are not cut
# (B < 2 LAYER_PART_ROWS, Note [Recurrent layer threads]: LSTM B 7, H 387 below, 388 above;
# LSTM H 64, B 255 and 256 cut the rows instead)
THRESHOLD_CASES = [("LSTM", 0, 24, 16), ("LSTM", 0, 25, 16), ("LSTM", 0, 64, 16),
                   ("LSTM", 0, 65, 16), ("GRU", 0, 73, 9), ("GRU", 0, 97, 9),
                   ("LSTM", 5, 145, 8), ("LSTM", 5, 193, 8), ("LSTM", 0, 259, 64),
                   ("GRU", 0, 207, 64), ("RNN_TANH", 0, 111, 600), ("LSTM", 0, 4, 80),
                   ("LSTM", 0, 4, 81), ("RNN_TANH", 0, 5, 330), ("LSTM", 0, 255, 64),
                   ("LSTM", 0, 256, 64), ("LSTM", 0, 7, 387), ("LSTM", 0, 7, 388)]


@pytest.mark.parametrize("mode,proj,B,H", THRESHOLD_CASES)
@pytest.mark.parametrize("dtype,tol", [(ptl.float64, 1e-11), (ptl.float32, 1e-4)])
def test_layer_sizes_and_threads(mode, proj, B, H, dtype, tol):
    """Across the GEMM's and the row split's thresholds: the same bits on 1 and 2 threads
    (Note [GEMM blocking]; rows never straddle a task), the forward against NumPy and every
    gradient against the loop of ops."""
    a = _layer_arrays(mode, 3, B, H, proj, seed=B)
    bs = ptl.tensor([B, B - 1, 1])
    one = _one_and_two_threads(mode, a, dtype, True, bs, tol)
    x = {n: None if v is None else _as(v, dtype).double().numpy() for n, v in a.items()}
    gates = _as(x["x"] @ x["w_ih"].T, dtype).double().numpy()
    ref = layer_ref(mode, gates, x["hx"], x["cx"], x["w_hh"], x["b_ih"], x["b_hh"],
                    x["w_hr"], True, bs.tolist())
    np.testing.assert_allclose(one["out0"].double().numpy(), ref[0], rtol=tol, atol=tol)


# rnn.c Note [Recurrent layer threads]: the CPU loop's batch rows cut once into
# min(threads, B // LAYER_PART_ROWS, W_hh's multiply-adds over every step // LAYER_SPLIT_MACS)
# parts of whole LAYER_PART_ROWS-row units, each walked on its own thread.
LAYER_PART_ROWS = 4
LAYER_SPLIT_MACS = 1 << 21


def test_layer_split_constants():
    """The constants the cases below are built on, read back from rnn.c."""
    with open(os.path.join(os.path.dirname(ptl.__file__), "..", "src", "aten", "native",
                           "rnn.c")) as f:
        text = f.read()
    assert re.search(r"#define LAYER_PART_ROWS (\d+)", text).group(1) == str(LAYER_PART_ROWS)
    assert re.search(r"#define LAYER_SPLIT_MACS \(1 << (\d+)\)", text).group(1) == "21"


# (mode, proj, T, B, H, packed): one part, then two, across LAYER_SPLIT_MACS per part (LSTM
# H 16: G P = 1024, T B = 4095 below two parts' worth, 4096 at it), across LAYER_PART_ROWS
# (B 7: one unit of whole rows; 8: two parts of 4; 9 and 13: a last part of 5 rows) with
# enough work, and with packed batches whose running rows end inside either part; GRU, RNN
# and LSTM with a projection (its dh W_hr per part).
SPLIT_CASES = [("LSTM", 0, 117, 35, 16, False), ("LSTM", 0, 128, 32, 16, False),
               ("LSTM", 0, 128, 32, 16, True), ("LSTM", 0, 150, 7, 32, False),
               ("LSTM", 0, 128, 8, 32, False), ("LSTM", 0, 120, 9, 32, True),
               ("LSTM", 24, 110, 13, 32, True), ("GRU", 0, 110, 13, 32, True),
               ("RNN_TANH", 0, 90, 12, 64, True), ("RNN_RELU", 0, 64, 17, 64, False)]


@pytest.mark.parametrize("mode,proj,T,B,H,packed", SPLIT_CASES)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype,tol", [(ptl.float64, 1e-10), (ptl.float32, 1e-4)])
def test_layer_row_split(mode, proj, T, B, H, packed, reverse, dtype, tol):
    """The loop's rows cut between two threads: the same bits as on one thread (values and
    every gradient), and both against the loop of ops."""
    from pytorchlite.nn.modules import rnn
    a = _layer_arrays(mode, T, B, H, proj, seed=T + B)
    a["w_hh"] /= np.sqrt(a["w_hh"].shape[1])   # no chaos over 100 steps: rounding stays small
    bs = None
    if packed:
        sizes = np.sort(np.random.default_rng(B).integers(1, B + 1, T))[::-1]
        sizes[0] = B
        bs = ptl.tensor(sizes.tolist(), dtype=ptl.int64)
    saved = ptl.get_num_threads()
    try:
        runs = []
        for nt in (1, 2):
            ptl.set_num_threads(nt)
            runs.append(_layer_results(rnn._run_direction, mode, a, dtype, reverse, bs))
        want = _layer_results(rnn._run_direction_ops, mode, a, dtype, reverse, bs)
    finally:
        ptl.set_num_threads(saved)
    for name in runs[0]:
        np.testing.assert_array_equal(runs[0][name].numpy(), runs[1][name].numpy(),
                                      err_msg=name)
    _assert_results_close(runs[1], want, tol)



@pytest.mark.parametrize("mode,proj", [("LSTM", 0), ("LSTM", 3), ("GRU", 0), ("RNN_TANH", 0)])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("B", [1, 7, 8, 13])
def test_layer_bias_grads_are_gate_grad_sums(mode, proj, reverse, packed, B):
    """The CPU loop sums the bias gradients step by step into one row per batch row (rnn.c
    bias_sums_add): b_ih's gradient is the sum over every step and row of the input gates'
    gradient (the backward's first output), in float64 against NumPy, and so is LSTM's and
    RNN's b_hh's; GRU's b_hh's differs only in the n gate.  One thread and two give the same
    bits (B 8, T 512, H 32 is at least two parts of LAYER_SPLIT_MACS without a projection,
    so two threads cut the rows in two)."""
    T, H = (512, 32) if B == 8 else (5, 4)
    a = _layer_arrays(mode, T, B, H, proj, seed=B + T)
    a["w_hh"] /= np.sqrt(a["w_hh"].shape[1])
    G = LAYER_GATES[mode] * H
    gates = np.random.default_rng(B).standard_normal((T, B, G))
    bs = None
    if packed:
        sizes = np.sort(np.random.default_rng(T).integers(1, B + 1, T))[::-1]
        sizes[0] = B
        bs = ptl.tensor(sizes.tolist(), dtype=ptl.int64)
    saved = ptl.get_num_threads()
    runs = []
    try:
        for nt in (1, 2):
            ptl.set_num_threads(nt)
            args = [_as(gates, ptl.float64, True)] + [
                _as(a[n], ptl.float64, True) for n in ("hx", "cx", "w_hh", "b_ih", "b_hh",
                                                       "w_hr")]
            outs = _layer_fn(mode, reverse, bs)(*args)
            rng = np.random.default_rng(1)
            loss = sum((o * _as(rng.standard_normal(tuple(o.shape)), ptl.float64)).sum()
                       for o in outs)
            loss.backward()
            runs.append([args[0].grad.numpy(), args[4].grad.numpy(), args[5].grad.numpy()])
    finally:
        ptl.set_num_threads(saved)
    for got, want in zip(runs[0], runs[1]):
        np.testing.assert_array_equal(got, want)
    d_gates, d_bi, d_bh = runs[0]
    np.testing.assert_allclose(d_bi, d_gates.sum((0, 1)), rtol=1e-12, atol=1e-12)
    if mode == "GRU":
        np.testing.assert_allclose(d_bh[:2 * H], d_gates.sum((0, 1))[:2 * H], rtol=1e-12,
                                   atol=1e-12)
    else:
        np.testing.assert_array_equal(d_bh, d_bi)


def _layer_args(mode="LSTM", T=2, B=3, H=2, proj=0, dtype=np.float64):
    a = _layer_arrays(mode, T, B, H, proj)
    gates = np.zeros((T, B, LAYER_GATES[mode] * H))
    return [gates] + [None if a[n] is None else a[n].astype(dtype)
                      for n in ("hx", "cx", "w_hh", "b_ih", "b_hh", "w_hr")]


def _call_layer(arrays, mode=2, reverse=False, batch_sizes=None):
    t = [None if v is None else ptl.from_numpy(np.ascontiguousarray(v)) for v in arrays]
    return aten._ptl_rnn_layer(*t, mode, reverse, batch_sizes)


def test_layer_errors():
    fn = "(while checking arguments for _ptl_rnn_layer)"
    a = _layer_args()
    gru = _layer_args("GRU")
    cases = [
        (a, {"mode": 7}, "_ptl_rnn_layer: unknown mode 7"),
        ([a[0][0]] + a[1:], {}, "Expected 3-dimensional tensor, but got 2-dimensional tensor "
         f"for argument #1 'input_gates' {fn}"),
        ([a[0][..., :-1]] + a[1:], {}, "_ptl_rnn_layer: the gates' size 7 is not a multiple "
         "of 4"),
        (a[:1] + [a[1][:, :1]] + a[2:], {}, "Expected tensor of size [3, 2], but got tensor of "
         f"size [3, 1] for argument #2 'hx' {fn}"),
        (a[:2] + [a[2][:2]] + a[3:], {}, "Expected tensor of size [3, 2], but got tensor of "
         f"size [2, 2] for argument #3 'cx' {fn}"),
        (a[:3] + [a[3].T] + a[4:], {}, "Expected tensor of size [8, 2], but got tensor of "
         f"size [2, 8] for argument #4 'w_hh' {fn}"),
        (a[:4] + [a[4][:-1]] + a[5:], {}, "Expected tensor of size [8], but got tensor of "
         f"size [7] for argument #5 'b_ih' {fn}"),
        (a[:5] + [None, None], {}, "_ptl_rnn_layer: b_ih and b_hh must be given together"),
        (a[:2] + [None] + a[3:], {}, "_ptl_rnn_layer: an LSTM needs cx"),
        (gru[:2] + [np.zeros((3, 2))] + gru[3:], {"mode": 3}, "_ptl_rnn_layer: cx is for "
         "LSTM only"),
        (gru[:6] + [np.zeros((2, 2))], {"mode": 3}, "_ptl_rnn_layer: w_hr is for LSTM only"),
        (a[:6] + [np.zeros((2, 3))], {}, "Expected tensor of size [2, 2], but got tensor of "
         f"size [2, 3] for argument #7 'w_hr' {fn}"),
        (a, {"batch_sizes": ptl.tensor([3, 4])}, "_ptl_rnn_layer: batch_sizes[1] = 4 is not "
         "in [0, 3]"),
        (a, {"batch_sizes": ptl.tensor([3, -1])}, "_ptl_rnn_layer: batch_sizes[1] = -1 is not "
         "in [0, 3]"),
        (a, {"batch_sizes": ptl.tensor([3])}, "Expected tensor of size [2], but got tensor of "
         f"size [1] for argument #10 'batch_sizes' {fn}"),
        (a, {"batch_sizes": ptl.tensor([3, 3], dtype=ptl.int32)}, "_ptl_rnn_layer: "
         "batch_sizes must be int64, got Int"),
        (a[:3] + [a[3].astype(np.float32)] + a[4:], {}, "expected scalar type Double but "
         "found Float"),
    ]
    for arrays, kw, msg in cases:
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            _call_layer(arrays, **kw)
    with pytest.raises(NotImplementedError, match=re.escape(
            "\"_ptl_rnn_layer_cpu\" not implemented for 'Half'")):
        _call_layer([v.astype(np.float16) if v is not None else None for v in a])


def test_layer_backward_errors():
    fn = "(while checking arguments for _ptl_rnn_layer_backward)"
    a = [None if v is None else ptl.from_numpy(v) for v in _layer_args("GRU")]
    out, ws, hy, _ = aten._ptl_rnn_layer(*a, 3, False)
    z = ptl.zeros(3, 2, dtype=ptl.float64)

    def back(*args):
        return aten._ptl_rnn_layer_backward(*args)
    with pytest.raises(RuntimeError, match=re.escape(
            f"Expected tensor of size [{ws.numel()}], but got tensor of size [{ws.numel() - 1}] "
            f"for argument #9 'workspace' {fn}")):
        back(out, None, None, a[1], None, a[3], None, out, ws[1:], 3, False, None, True)
    with pytest.raises(RuntimeError, match=re.escape(
            f"Expected tensor of size [2, 3, 2], but got tensor of size [2, 3, 1] for argument "
            f"#1 'grad_output' {fn}")):
        back(out[..., :1], None, None, a[1], None, a[3], None, out, ws, 3, False, None, True)
    with pytest.raises(RuntimeError, match="_ptl_rnn_layer_backward: grad_cy is for LSTM only"):
        back(None, hy, z, a[1], None, a[3], None, out, ws, 3, False, None, True)
    g = back(out, hy, None, a[1], None, a[3], None, out, ws, 3, True, ptl.tensor([3, 1]), False)
    assert [tuple(t.shape) for t in g[:2]] == [(2, 3, 6), (3, 2)] and g[2] is None
    assert [tuple(t.shape) for t in g[3]] == [(6, 2)]


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
