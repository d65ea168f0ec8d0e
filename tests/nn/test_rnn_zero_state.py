"""The recurrent layer from a zero initial state (src/aten/native/rnn.c, Note [Recurrent
layer]): when hx is all zeros (+0 or -0) on the CPU, the first step's h_{-1} W_hh^T and dW_hh's
hx term are skipped.  Values and every gradient against nn/modules/rnn.py's loop of ops and
the same bits on one thread and two; an hx whose only nonzero element is its last takes the
full path.  Also the backward's fetch of the next step's rows (Note [LSTM backward fetch] in
rnn_rows.c) at the first and last steps: T = 1, 2 and 3, forward and reverse."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref
from test_rnn import (LAYER_KINDS, LAYER_SHAPES, _assert_results_close, _layer_arrays,
                      _layer_results, _one_and_two_threads)

# LAYER_SHAPES and T = 2 and 3 (the backward's fetch stops one and two steps from the end)
SHAPES = LAYER_SHAPES + [(2, 4, 5, [4, 2]), (3, 5, 4, [5, 3, 1])]
HX_KINDS = ["zeros", "negative zeros", "last nonzero"]


def _hx(kind, shape):
    hx = np.zeros(shape)
    if kind == "negative zeros":
        hx = np.copysign(hx, -1.0)
    elif kind == "last nonzero" and hx.size:
        hx.reshape(-1)[-1] = 0.5
    return hx


@pytest.mark.parametrize("mode,proj", LAYER_KINDS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("hx_kind", HX_KINDS)
@pytest.mark.parametrize("dtype,tol", [(ptl.float64, 1e-12), (ptl.float32, 2e-5)])
def test_zero_state_matches_loop_of_ops(mode, proj, reverse, packed, hx_kind, dtype, tol):
    from pytorchlite.nn.modules import rnn
    for k, (T, B, H, sizes) in enumerate(SHAPES):
        a = _layer_arrays(mode, T, B, H, proj, bias=k != 1, seed=k)
        a["hx"] = _hx(hx_kind, a["hx"].shape)
        bs = ptl.tensor(sizes, dtype=ptl.int64) if packed else None
        got = _layer_results(rnn._run_direction, mode, a, dtype, reverse, bs)
        want = _layer_results(rnn._run_direction_ops, mode, a, dtype, reverse, bs)
        _assert_results_close(got, want, tol)


@pytest.mark.parametrize("mode,proj", [("LSTM", 0), ("LSTM", 3), ("RNN_TANH", 0), ("GRU", 0)])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("hx_kind", HX_KINDS)
@pytest.mark.parametrize("dtype,tol", [(ptl.float64, 1e-10), (ptl.float32, 1e-4)])
def test_zero_state_row_split(mode, proj, reverse, hx_kind, dtype, tol):
    """B 8, T 128, H 32: an LSTM's loop rows cut in two on two threads (at least two
    parts of LAYER_SPLIT_MACS); the same bits as on one thread, and the loop of ops."""
    T, B, H = 128, 8, 32
    a = _layer_arrays(mode, T, B, H, proj, seed=3)
    a["w_hh"] /= np.sqrt(a["w_hh"].shape[1])
    a["hx"] = _hx(hx_kind, a["hx"].shape)
    _one_and_two_threads(mode, a, dtype, reverse, None, tol)


@torch_ref
def test_zero_state_module_matches_torch():
    """nn.LSTM without hx (zeros) and with hx given as zeros: the same outputs and
    gradients as PyTorch's, in float32."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 4, 3)).astype(np.float32)
    ours = ptl.nn.LSTM(3, 5, 2)
    ref = torch.nn.LSTM(3, 5, 2)
    with torch.no_grad():
        for (n, p), q in zip(ours.named_parameters(), ref.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy()))
    for given in (False, True):
        xo = ptl.from_numpy(x).requires_grad_()
        xr = torch.from_numpy(x).requires_grad_()
        if given:
            zo = (ptl.zeros(2, 4, 5), ptl.zeros(2, 4, 5))
            zr = (torch.zeros(2, 4, 5), torch.zeros(2, 4, 5))
            yo, yr = ours(xo, zo)[0], ref(xr, zr)[0]
        else:
            yo, yr = ours(xo)[0], ref(xr)[0]
        (yo * yo).sum().backward()
        (yr * yr).sum().backward()
        np.testing.assert_allclose(yo.detach().numpy(), yr.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(xo.grad.numpy(), xr.grad.numpy(), rtol=1e-4, atol=1e-5)
        for p, q in zip(ours.parameters(), ref.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5)
            p.grad = None
            q.grad = None


@pytest.mark.parametrize("mode,proj", [("LSTM", 0), ("LSTM", 3), ("RNN_TANH", 0), ("GRU", 0)])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
def test_zero_state_with_a_nonfinite_w_hh_keeps_the_products(mode, proj, bad, dtype):
    """0 * inf is nan: with a non-finite W_hh the first step's product and dW_hh's hx term are
    taken, so nan and inf land where the loop of ops puts them (skipping them would leave the
    first step finite)."""
    from pytorchlite.nn.modules import rnn
    a = _layer_arrays(mode, 3, 2, 4, proj, seed=5)
    a["hx"] = np.zeros_like(a["hx"])
    a["w_hh"][1, 0] = bad
    got = _layer_results(rnn._run_direction, mode, a, dtype, False, None)
    want = _layer_results(rnn._run_direction_ops, mode, a, dtype, False, None)
    for name in want:
        g, w = got[name], want[name]
        if w is None:
            continue
        g, w = g.double().numpy(), w.double().numpy()
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=name)
        np.testing.assert_array_equal(np.isinf(g), np.isinf(w), err_msg=name)
    assert np.isnan(got["out0"].double().numpy()[0]).any()
