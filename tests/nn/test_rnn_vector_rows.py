"""The float32 vector rows of the recurrent cells (native/rnn_rows.c): the LSTM rows'
nonlinearities through the unchecked exp (Note [LSTM row nonlinearities]) on gate sums at
and past its clamps (10 for tanh, -20 and 88 for the sigmoid's -x), infinities and NaN; and
gate_sum's vector form (the gates' sums, the bias gradients' running sums and dh +=
grad_output[t] of the recurrent layer) at every tail of 8 and 16 lanes.  Each in a child
process per capability: AVX2 and AVX-512 give the same bits, and every capability (the
portable rows included) agrees with NumPy in float64."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import ROOT

# gate sums at the clamps and past them, the polynomial's edge (0.625), signed zeros and tiny
# values, the infinities and NaN, then a sweep across [-120, 120]
SPECIALS = [np.nan, np.inf, -np.inf, -87.9, -88.0, -88.1, -88.7, -89.0, -100.0, 88.5, 20.0,
            -20.0, 20.5, -20.5, 10.0, 10.01, -10.01, 9.99, 0.0, -0.0, 1e-30, -1e-30, 0.625,
            -0.6249, 3.0]
EXTREME_SCRIPT = """
import sys
import numpy as np, pytorchlite as ptl
aten = ptl.ops.aten
specials = np.array([float(v) for v in %r], dtype=np.float32)
out = {}
for h in (7, 16, 37):
    g = np.resize(specials, (3, 4 * h)).astype(np.float32)
    g[2] = np.linspace(-120, 120, 4 * h)
    cx = np.resize(specials[::-1], (3, h)).astype(np.float32)
    t = [ptl.from_numpy(a) for a in (g, np.zeros_like(g), cx)]
    hy, cy, ws = aten._thnn_fused_lstm_cell(*t)
    ones = ptl.ones(3, h)
    gg, gcx, _ = aten._thnn_fused_lstm_cell_backward_impl(ones, ones, t[2], cy, ws, False)
    for name, r in (("hy", hy), ("cy", cy), ("ws", ws), ("gg", gg), ("gcx", gcx)):
        out[f"{h} {name}"] = r.numpy()
np.savez(sys.argv[1], **out)
""" % ([str(v) for v in SPECIALS],)


def _child(script, capability, path):
    env = dict(os.environ)
    if capability is not None:
        env["PTL_CPU_CAPABILITY"] = capability
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, env=env, cwd=ROOT)
    return dict(np.load(path))


def _runs(script, tmp_path):
    """{capability: results}; native and AVX2 compared bit for bit on an AVX-512 CPU."""
    runs = {"native": _child(script, None, tmp_path / "native.npz"),
            "default": _child(script, "default", tmp_path / "default.npz")}
    if ptl.backends.cpu.get_cpu_capability() == "AVX512":
        avx2 = _child(script, "avx2", tmp_path / "avx2.npz")
        for key in runs["native"]:
            np.testing.assert_array_equal(runs["native"][key], avx2[key], err_msg=key)
    return runs


def _sig(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def test_lstm_rows_at_the_clamps_infinities_and_nan(tmp_path):
    """Every gate against NumPy within 2e-6 (a sigmoid below -88 gives at most 6.1e-39, not
    0), tanh and sigmoid of +-inf exactly +-1, 1 (and at most 6.1e-39 for -inf), NaN kept;
    cy, hy and the backward's gradients from those gates within the cell tests' tolerances
    (NaN where a NaN gate or state feeds them)."""
    specials = np.array(SPECIALS, dtype=np.float32)
    for cap, r in _runs(EXTREME_SCRIPT, tmp_path).items():
        for h in (7, 16, 37):
            g = np.resize(specials, (3, 4 * h)).astype(np.float64)
            g[2] = np.linspace(-120, 120, 4 * h).astype(np.float32)
            cx = np.resize(specials[::-1], (3, h)).astype(np.float64)
            ws = r[f"{h} ws"].astype(np.float64)
            act = np.concatenate([_sig(g[:, :2 * h]), np.tanh(g[:, 2 * h:3 * h]),
                                  _sig(g[:, 3 * h:])], 1)
            what = f"{cap} h={h}"
            np.testing.assert_array_equal(np.isnan(ws), np.isnan(g), err_msg=what)
            np.testing.assert_allclose(ws, act, rtol=2e-6, atol=2e-6, err_msg=what)
            assert (ws[~np.isnan(ws)] >= -1).all() and (ws[~np.isnan(ws)] <= 1).all(), what
            assert (ws[g == np.inf] == 1).all(), what
            tanh_lanes = np.zeros_like(g, dtype=bool)
            tanh_lanes[:, 2 * h:3 * h] = True
            assert (ws[(g == -np.inf) & tanh_lanes] == -1).all(), what
            low = ws[(g == -np.inf) & ~tanh_lanes]
            assert ((low >= 0) & (low <= 6.1e-39)).all(), what
            with np.errstate(invalid="ignore", over="ignore"):
                cy = ws[:, h:2 * h] * cx + ws[:, :h] * ws[:, 2 * h:3 * h]
                hy = ws[:, 3 * h:] * np.tanh(cy)
                tc = np.tanh(cy)
                gct = ws[:, 3 * h:] * (1 - tc * tc) + 1
                i, f, gt, o = (ws[:, k * h:(k + 1) * h] for k in range(4))
                gg = np.concatenate([gct * gt * i * (1 - i), gct * cx * f * (1 - f),
                                     gct * i * (1 - gt * gt), tc * o * (1 - o)], 1)
            for name, want, tol in (("cy", cy, 2e-6), ("hy", hy, 2e-6), ("gg", gg, 1e-5),
                                    ("gcx", gct * f, 1e-5)):
                got = r[f"{h} {name}"].astype(np.float64)
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what + name)
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what + name)


# the plain relu layer: its cell is gate_sum (with both biases) and a relu, its backward's
# dh += grad_output[t] and bias sums are gate_sum too; H = G from 1 to 40 covers every tail
# of 8 and 16 lanes and whole vectors of both
GATE_SUM_HIDDEN = list(range(1, 41))
GATE_SUM_SCRIPT = """
import sys
import numpy as np, pytorchlite as ptl
aten = ptl.ops.aten
out = {}
for h in %r:
    rng = np.random.default_rng(h)
    a = [rng.uniform(-1, 1, s).astype(np.float32) for s in
         [(4, 3, h), (3, h), (h, h), (h,), (h,), (4, 3, h)]]
    ig, hx, w, bi, bh, gout = [ptl.from_numpy(x) for x in a]
    o, ws, hy, _ = aten._ptl_rnn_layer(ig, hx, None, w.requires_grad_(), bi, bh, None, 0,
                                       False, None)
    gig, ghx, _, grads = aten._ptl_rnn_layer_backward(gout, None, None, hx, None, w, None, o,
                                                      ws, 0, False, None, True)
    for name, r in (("out", o), ("gig", gig), ("ghx", ghx), ("gw", grads[0]),
                    ("gb_ih", grads[1]), ("gb_hh", grads[2])):
        out[f"{h} {name}"] = r.detach().numpy()
np.savez(sys.argv[1], **out)
""" % (GATE_SUM_HIDDEN,)


def _relu_layer_ref(ig, hx, w, b, gout):
    """NumPy float64: the relu layer's output and its gradients (input gates, hx, W_hh, bias)."""
    T = ig.shape[0]
    hs, h = [hx], hx
    for t in range(T):
        h = np.maximum(ig[t] + h @ w.T + b, 0)
        hs.append(h)
    gig, gw, dh = np.zeros_like(ig), np.zeros_like(w), np.zeros_like(hx)
    for t in range(T - 1, -1, -1):
        dh = dh + gout[t]
        gig[t] = dh * (hs[t + 1] > 0)
        gw += gig[t].T @ hs[t]
        dh = gig[t] @ w
    return np.stack(hs[1:]), gig, dh, gw, gig.sum((0, 1))


@pytest.mark.parametrize("capability", ["native", "default"])
def test_gate_sums_every_tail(tmp_path, capability):
    """gate_sum's vector form at every tail: the relu layer's forward and backward against
    NumPy in float64 (AVX2 and AVX-512 the same bits, checked by _runs)."""
    r = _runs(GATE_SUM_SCRIPT, tmp_path)[capability]
    for h in GATE_SUM_HIDDEN:
        rng = np.random.default_rng(h)
        a = [rng.uniform(-1, 1, s).astype(np.float32).astype(np.float64) for s in
             [(4, 3, h), (3, h), (h, h), (h,), (h,), (4, 3, h)]]
        out, gig, ghx, gw, gb = _relu_layer_ref(a[0], a[1], a[2], a[3] + a[4], a[5])
        for name, want in (("out", out), ("gig", gig), ("ghx", ghx), ("gw", gw),
                           ("gb_ih", gb), ("gb_hh", gb)):
            np.testing.assert_allclose(r[f"{h} {name}"], want, rtol=2e-5, atol=2e-5,
                                       err_msg=f"{capability} h={h} {name}")


# tanh's lanes (Note [LSTM row nonlinearities]): a vector whose lanes are all below 0.625 in
# |x| skips the exp, one whose lanes are all at or above it skips the polynomial; row 0 of
# each case has every g gate and c small, row 2 every one large (NaN among them), row 1 the
# two mixed two lanes by two lanes, so that every width of vector meets all three kinds
TANH_LANES_SCRIPT = """
import sys
import numpy as np, pytorchlite as ptl
aten = ptl.ops.aten
out = {}
for h in (4, 8, 16, 19, 40):
    rng = np.random.default_rng(h)
    small = rng.uniform(-0.62, 0.62, h)
    large = rng.uniform(0.625, 12, h) * rng.choice([-1, 1], h)
    large[2], large[3] = 0.625, -0.625   # the polynomial's edge, on the exp's side
    if h > 6:
        large[6] = np.nan
    mixed = np.where(np.arange(h) % 4 < 2, small, large)
    g = np.zeros((3, 4 * h), np.float32)
    g[:, 2 * h:3 * h] = [small, mixed, large]
    cx = np.array([small, mixed, large], np.float32)
    t = [ptl.from_numpy(a) for a in (g, np.zeros_like(g), cx)]
    hy, cy, ws = aten._thnn_fused_lstm_cell(*t)
    ones = ptl.ones(3, h)
    gg, gcx, _ = aten._thnn_fused_lstm_cell_backward_impl(ones, ones, t[2], cy, ws, False)
    for name, r in (("hy", hy), ("cy", cy), ("ws", ws), ("gg", gg), ("gcx", gcx)):
        out[f"{h} {name}"] = r.numpy()
np.savez(sys.argv[1], **out)
"""


def test_lstm_tanh_lanes_do_not_change_bits(tmp_path):
    """A unit's results do not depend on its neighbours in the vector: row 1's small lanes
    have row 0's bits and its large ones row 2's (the same gate sums and c_{t-1}), forward
    (the activated g gate, cy, hy) and backward (tanh(cy) in the gates' gradients)."""
    for cap, r in _runs(TANH_LANES_SCRIPT, tmp_path).items():
        for h in (4, 8, 16, 19, 40):
            take = np.arange(h) % 4 < 2
            for name in ("hy", "cy", "gcx", "ws", "gg"):
                got = r[f"{h} {name}"]
                cols = np.tile(take, got.shape[1] // h)
                what = f"{cap} h={h} {name}"
                np.testing.assert_array_equal(got[1][cols], got[0][cols], err_msg=what)
                np.testing.assert_array_equal(got[1][~cols], got[2][~cols], err_msg=what)
