"""The recurrent layer's gate gradients on the CPU (rnn.c Note [Recurrent layer]): an LSTM's
[T, B, 4H] rows are one cache line longer when 4H's bytes are a multiple of two lines, so that
the weight gradients' GEMMs read dgates^T in place (gemm.c Note [GEMM direct A]), and the
backward returns grad_input_gates as that strided view.  At and across the rule (float32 H
7 / 8 / 16, float64 H 3 / 4), every gradient against the loop of ops, the same bits on 1 and 2
threads (rows cut between them or not), and float64 gradcheck on padded rows."""
import numpy as np
import pytest

import pytorchlite as ptl
from test_rnn import (LAYER_MODES, _as, _assert_results_close, _layer_arrays, _layer_fn,
                      _layer_results)

aten = ptl.ops.aten


def _padded(H, dtype):
    itemsize = 4 if dtype == ptl.float32 else 8
    return 4 * H * itemsize % 128 == 0


# (H, dtype): below the rule (4H * itemsize = 112 and 96 bytes), at it (128) and past it
SIZES = [(7, ptl.float32), (8, ptl.float32), (16, ptl.float32), (3, ptl.float64),
         (4, ptl.float64)]


@pytest.mark.parametrize("H,dtype", SIZES)
@pytest.mark.parametrize("proj", [0, 3])
@pytest.mark.parametrize("reverse", [False, True])
def test_gate_grads_strides_and_values(H, dtype, proj, reverse):
    T, B = 5, 3
    a = _layer_arrays("LSTM", T, B, H, proj, seed=H)
    names = ("hx", "cx", "w_hh", "b_ih", "b_hh", "w_hr")
    gates = np.random.default_rng(1).standard_normal((T, B, 4 * H))
    args = [_as(gates, dtype, True)] + [_as(a[n], dtype, True) for n in names]
    out = _layer_fn("LSTM", reverse, None)(*args)
    out[0].sum().backward()
    g = args[0].grad
    assert tuple(g.shape) == (T, B, 4 * H)
    step = 4 * H + (64 // g.element_size() if _padded(H, dtype) else 0)
    op = [t.detach() for t in aten._ptl_rnn_layer(*args, LAYER_MODES["LSTM"], reverse, None)]
    plain = [None if t is None else t.detach() for t in args]
    res = aten._ptl_rnn_layer_backward(ptl.ones_like(op[0]), None, None, plain[1], plain[2],
                                       plain[3], plain[6], op[0], op[1], LAYER_MODES["LSTM"],
                                       reverse, None, True)
    assert res[0].stride() == (B * step, step, 1)
    np.testing.assert_array_equal(res[0].numpy(), g.numpy())
    for packed in (False, True):
        bs = ptl.tensor([3, 2, 2, 1, 1]) if packed else None
        from pytorchlite.nn.modules import rnn
        got = _layer_results(rnn._run_direction, "LSTM", a, dtype, reverse, bs)
        want = _layer_results(rnn._run_direction_ops, "LSTM", a, dtype, reverse, bs)
        _assert_results_close(got, want, 1e-12 if dtype == ptl.float64 else 2e-5)


# (T, B, H, packed): rows in one part and cut between two threads (Note [Recurrent layer
# threads]: B 7 is one unit of 4 rows and a rest, 16 two parts), padded and not
THREAD_CASES = [(40, 7, 8, False), (40, 16, 8, True), (40, 16, 7, False), (30, 16, 32, True)]


@pytest.mark.parametrize("T,B,H,packed", THREAD_CASES)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_gate_grads_threads_same_bits(T, B, H, packed, dtype):
    a = _layer_arrays("LSTM", T, B, H, seed=T + B)
    a["w_hh"] /= np.sqrt(H)
    bs = None
    if packed:
        sizes = np.sort(np.random.default_rng(B).integers(1, B + 1, T))[::-1]
        sizes[0] = B
        bs = ptl.tensor(sizes.tolist(), dtype=ptl.int64)
    gates = np.random.default_rng(2).standard_normal((T, B, 4 * H)) / 2
    saved = ptl.get_num_threads()
    runs = []
    try:
        for nt in (1, 2):
            ptl.set_num_threads(nt)
            args = [_as(gates, dtype, True)] + [
                _as(a[n], dtype, True) for n in ("hx", "cx", "w_hh", "b_ih", "b_hh", "w_hr")]
            outs = _layer_fn("LSTM", False, bs)(*args)
            rng = np.random.default_rng(3)
            sum((o * _as(rng.standard_normal(tuple(o.shape)), dtype)).sum()
                for o in outs).backward()
            runs.append([t.grad.numpy() for t in args if t is not None])
    finally:
        ptl.set_num_threads(saved)
    for one, two in zip(*runs):
        np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("packed", [False, True])
def test_gate_grads_padded_gradcheck(reverse, packed):
    T, B, H = 3, 2, 4
    assert _padded(H, ptl.float64)
    a = _layer_arrays("LSTM", T, B, H, seed=11)
    gates = np.random.default_rng(12).standard_normal((T, B, 4 * H))
    args = [_as(gates, ptl.float64, True)] + [_as(a[n], ptl.float64, True) for n in
                                              ("hx", "cx", "w_hh", "b_ih", "b_hh")] + [None]
    bs = ptl.tensor([2, 1, 1]) if packed else None
    assert ptl.autograd.gradcheck(_layer_fn("LSTM", reverse, bs), tuple(args))
