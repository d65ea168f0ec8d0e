"""The recurrent layer's bias gradients and its finiteness check of W_hh (src/aten/native/rnn.c,
Note [Recurrent layer]; rnn_rows.c).  The CPU backward sums each step's gate gradients into
one row per group of BSUM_ROWS (4) batch rows: batches below, at and across multiples of 4,
packed sequences whose running rows end inside a group, against nn/modules/rnn.py's loop of
ops and, cut into two parts on two threads, the same bits as on one.  rnn_all_finite: a zero
state skips the first step's h W_hh^T only while every element of W_hh is finite, so a single
infinity or NaN at each position of W_hh (16 to 324 elements, float32 and float64), in a
child process per capability, makes the first step's output NaN."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import ROOT
from test_rnn import (_assert_results_close, _layer_arrays, _layer_results,
                      _one_and_two_threads)

BATCHES = [1, 2, 3, 4, 5, 7, 8, 9, 12, 13]


def _sizes(T, B):
    """Packed batch sizes from B down, ending inside a group of 4 rows where B allows."""
    return [max(1, B - t) for t in range(T)]


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("dtype,tol", [(ptl.float64, 1e-12), (ptl.float32, 2e-5)])
def test_bias_sums_by_groups_match_loop_of_ops(mode, packed, dtype, tol):
    from pytorchlite.nn.modules import rnn
    for B in BATCHES:
        T, H = 6, 5
        a = _layer_arrays(mode, T, B, H, seed=B)
        bs = ptl.tensor(_sizes(T, B), dtype=ptl.int64) if packed else None
        got = _layer_results(rnn._run_direction, mode, a, dtype, False, bs)
        want = _layer_results(rnn._run_direction_ops, mode, a, dtype, False, bs)
        assert got["grad b_ih"] is not None
        _assert_results_close(got, want, tol)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("B", [8, 10, 13])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("dtype,tol", [(ptl.float64, 1e-10), (ptl.float32, 1e-4)])
def test_bias_sums_same_bits_on_two_threads(mode, B, packed, dtype, tol):
    """T 128, H 32: two parts of at least LAYER_SPLIT_MACS on two threads (LSTM; GRU's
    3H gates at B 13 only), cut at a multiple of 4 rows (B 10: rows 0-4 and 4-10, B 13: 0-8
    and 8-13)."""
    T, H = 128, 32
    a = _layer_arrays(mode, T, B, H, seed=7)
    a["w_hh"] /= np.sqrt(a["w_hh"].shape[1])
    bs = ptl.tensor(_sizes(T, B), dtype=ptl.int64) if packed else None
    _one_and_two_threads(mode, a, dtype, False, bs, tol)


FINITE_SCRIPT = """
import sys
import numpy as np, pytorchlite as ptl
aten = ptl.ops.aten
res = {}
for dt in (np.float32, np.float64):
    for h in (2, 3, 4, 5, 9):
        g = 4 * h
        gates = ptl.from_numpy(np.full((1, 1, g), 0.25, dt))
        h0 = ptl.from_numpy(np.zeros((1, h), dt))
        w = np.random.default_rng(h).uniform(-0.5, 0.5, (g, h)).astype(dt)
        out = aten._ptl_rnn_layer(gates, h0, h0, ptl.from_numpy(w), None, None, None, 2,
                                  False, None)[0].numpy()
        flags = [bool(np.isfinite(out).all())]
        for bad in (np.inf, -np.inf, np.nan):
            for pos in range(w.size):
                wb = w.copy()
                wb.reshape(-1)[pos] = bad
                out = aten._ptl_rnn_layer(gates, h0, h0, ptl.from_numpy(wb), None, None, None,
                                          2, False, None)[0].numpy()
                flags.append(bool(np.isnan(out).any()))
        res[f"{np.dtype(dt).name} {h}"] = np.array(flags)
np.savez(sys.argv[1], **res)
"""


@pytest.mark.parametrize("capability", [None, "avx2", "default"])
def test_w_hh_finiteness_at_every_position(tmp_path, capability):
    if capability == "avx2" and ptl.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"):
        pytest.skip("the AVX2 rows need an AVX2 CPU")
    env = dict(os.environ)
    if capability is not None:
        env["PTL_CPU_CAPABILITY"] = capability
    path = tmp_path / "finite.npz"
    subprocess.run([sys.executable, "-c", FINITE_SCRIPT, str(path)], check=True, env=env,
                   cwd=ROOT)
    res = dict(np.load(path))
    assert len(res) == 10
    for key, flags in res.items():
        assert flags.size == 1 + 3 * 4 * int(key.split()[1]) ** 2, key
        bad = np.flatnonzero(~flags)
        assert bad.size == 0, f"{key}: flag {bad[:5]} (0: the finite W_hh)"


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_backward_zero_state_with_a_nonfinite_w_hh(bad, dtype):
    """The backward skips dW_hh's hx term for a zero hx whatever W_hh holds (W_hh is not in
    dg_0^T hx): one step (a longer loop carries W_hh's value into dg_0 through dh), a finite
    workspace (the forward's, on a finite W_hh) and W_hh holding `bad`: dW_hh is zero,
    dh_{-1} = dg_0 W_hh takes the non-finite value where NumPy puts it."""
    aten = ptl.ops.aten
    T, B, H = 1, 3, 5
    rng = np.random.default_rng(11)
    gates = ptl.from_numpy(rng.uniform(-1, 1, (T, B, 4 * H)).astype(dtype))
    w = rng.uniform(-0.5, 0.5, (4 * H, H)).astype(dtype)
    b = [ptl.from_numpy(rng.uniform(-0.5, 0.5, 4 * H).astype(dtype)) for _ in range(2)]
    h0 = ptl.from_numpy(np.zeros((B, H), dtype))
    wg = ptl.from_numpy(w).requires_grad_()
    with ptl.enable_grad():
        out, ws, _, _ = aten._ptl_rnn_layer(gates, h0, h0, wg, b[0], b[1], None, 2, False,
                                            None)
    gout = ptl.from_numpy(rng.standard_normal((T, B, H)).astype(dtype))
    wb = w.copy()
    wb[2, 1] = bad
    dg, dhx, _, grads = aten._ptl_rnn_layer_backward(
        gout, None, None, h0, h0, ptl.from_numpy(wb), None, out.detach(), ws.detach(), 2,
        False, None, True)
    dg64 = dg.double().numpy()
    np.testing.assert_array_equal(grads[0].double().numpy(), np.zeros((4 * H, H)))
    assert np.isfinite(dg64).all() and np.abs(dg64).max() > 0
    with np.errstate(invalid="ignore", over="ignore"):
        ref = dg64[0] @ wb.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(dhx.double().numpy()), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(dhx.double().numpy()), np.isinf(ref))
