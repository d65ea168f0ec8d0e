"""An LSTM layer that projects its input step by step (rnn.c Note [LSTM step projections]):
_ptl_rnn_layer with mode LSTM + 16 takes x and W_ih (in w_hr's place) instead of
F.linear(x, W_ih), and nn.LSTM takes it on the CPU when x and W_ih want gradients.  The same
bits as the F.linear form (forward, hy, cy and every gradient) for float32 and float64 on the
shapes of test_rnn.py, across the GEMM's rules for a product split by rows
(ptl_gemm_packed_rows_exact), the scratch's chunk of steps and the row split of two threads;
the reference loop in NumPy float64; gradcheck; no aliasing between calls; the errors."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.nn.modules import rnn
from test_rnn import LAYER_MODES, LAYER_SHAPES, _as, _layer_arrays, layer_ref
from test_seq_layers import randn

aten = ptl.ops.aten
STEP_PROJECTIONS = 16
NAMES = ("x", "hx", "cx", "w_ih", "w_hh", "b_ih", "b_hh")


def _leaves(a, dtype):
    return {n: _as(a[n], dtype, grad=True) for n in NAMES if a[n] is not None}


def _call(t, step_proj, reverse, batch_sizes):
    """(output, hy, cy) of one LSTM layer: the step-projection form or F.linear's."""
    if step_proj:
        return aten._ptl_rnn_layer(t["x"], t["hx"], t["cx"], t["w_hh"], t.get("b_ih"),
                                   t.get("b_hh"), t["w_ih"], LAYER_MODES["LSTM"] + STEP_PROJECTIONS,
                                   reverse, batch_sizes)
    return aten._ptl_rnn_layer(F.linear(t["x"], t["w_ih"]), t["hx"], t["cx"], t["w_hh"],
                               t.get("b_ih"), t.get("b_hh"), None, LAYER_MODES["LSTM"], reverse,
                               batch_sizes)


def _results(a, dtype, step_proj, reverse=False, batch_sizes=None, seed=0):
    """Outputs and every leaf's gradient after a weighted sum of (output, hy, cy)."""
    t = _leaves(a, dtype)
    out, _, hy, cy = _call(t, step_proj, reverse, batch_sizes)
    rng = np.random.default_rng(seed)
    loss = sum((o * _as(rng.standard_normal(tuple(o.shape)), dtype)).sum() for o in (out, hy, cy))
    grads = ptl.autograd.grad(loss, list(t.values()), allow_unused=True)
    res = {"out": out.detach(), "hy": hy.detach(), "cy": cy.detach()}
    res.update({f"grad {n}": g for n, g in zip(t, grads)})
    return res


def _assert_same_bits(got, want):
    assert got.keys() == want.keys()
    for name in want:
        if want[name] is None:
            assert got[name] is None or not got[name].abs().sum().item(), name
            continue
        assert got[name] is not None, name
        assert got[name].dtype == want[name].dtype, name
        np.testing.assert_array_equal(got[name].numpy(), want[name].numpy(), err_msg=name)


def _threads(n, fn):
    saved = ptl.get_num_threads()
    ptl.set_num_threads(n)
    try:
        return fn()
    finally:
        ptl.set_num_threads(saved)


# (T, B, I, H): the language model's layers (T 64, B 16, H 128: four steps a chunk), T under
# and not a multiple of the chunk; B * 4H * itemsize past the scratch's 128 KiB (one step a
# chunk: B 64 / 65 at H 128 in float32); products ptl_gemm would not compute as the packed
# rows do, which the op then projects whole (T B = 1: a vector product; G = 4, H 1: computed
# transposed); I = 1; T = 0, B = 0
PROJ_SHAPES = [(64, 16, 64, 128), (7, 3, 5, 6), (3, 2, 4, 8), (9, 5, 7, 9), (5, 64, 3, 128),
               (3, 65, 2, 128), (1, 1, 3, 4), (6, 5, 3, 1), (5, 4, 1, 8),
               (0, 3, 4, 5), (3, 0, 4, 5)]


@pytest.mark.parametrize("T,B,I,H", PROJ_SHAPES)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_same_bits_as_the_projection(T, B, I, H, reverse, dtype):
    a = _layer_arrays("LSTM", T, B, H, seed=T + B + H, I=I)
    _assert_same_bits(_results(a, dtype, True, reverse), _results(a, dtype, False, reverse))


@pytest.mark.parametrize("k", range(len(LAYER_SHAPES)))
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_same_bits_on_test_rnn_shapes(k, packed, bias, dtype):
    """test_rnn.py's layer shapes (odd T, T 1 and 0, B 1, an empty batch), packed sequences
    (the resting rows' x still in W_ih's gradient), without biases."""
    T, B, H, sizes = LAYER_SHAPES[k]
    a = _layer_arrays("LSTM", T, B, H, bias=bias, seed=k)
    bs = ptl.tensor(sizes, dtype=ptl.int64) if packed else None
    for reverse in (False, True):
        _assert_same_bits(_results(a, dtype, True, reverse, bs),
                          _results(a, dtype, False, reverse, bs))


# (T, B, H, packed): one part and two (Note [Recurrent layer threads]: B 8 and 13 cut into
# two parts with enough work, each part projecting its own rows step by step), a chunk of
# four steps and one (B 70, H 128 in float32: 140 KiB a step)
THREAD_CASES = [(128, 8, 32, False), (120, 13, 32, True), (40, 16, 64, True), (6, 70, 128, False)]


@pytest.mark.parametrize("T,B,H,packed", THREAD_CASES)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_one_and_two_threads(T, B, H, packed, dtype):
    a = _layer_arrays("LSTM", T, B, H, seed=B, I=5)
    bs = ptl.tensor([B] * (T // 2) + [max(B - 3, 1)] * (T - T // 2)) if packed else None
    want = _threads(1, lambda: _results(a, dtype, False, True, bs))
    for n in (1, 2):
        _assert_same_bits(_threads(n, lambda: _results(a, dtype, True, True, bs)), want)


@pytest.mark.parametrize("packed", [False, True])
def test_matches_numpy(packed):
    """The forward against the float64 loop of test_rnn.py."""
    T, B, H = 6, 4, 5
    a = _layer_arrays("LSTM", T, B, H, seed=11, I=4)
    sizes = [4, 4, 3, 3, 1, 1]
    bs = ptl.tensor(sizes) if packed else None
    out, _, hy, cy = _call(_leaves(a, ptl.float64), True, False, bs)
    ref = layer_ref("LSTM", a["x"] @ a["w_ih"].T, a["hx"], a["cx"], a["w_hh"], a["b_ih"],
                    a["b_hh"], None, False, sizes if packed else None)
    for got, want in zip((out, hy, cy), ref):
        np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("packed", [False, True])
def test_gradcheck(reverse, packed):
    a = _layer_arrays("LSTM", 3, 2, 2, seed=5, I=3)
    t = _leaves(a, ptl.float64)
    bs = ptl.tensor([2, 1, 1]) if packed else None

    def f(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
        out, _, hy, cy = aten._ptl_rnn_layer(x, hx, cx, w_hh, b_ih, b_hh, w_ih,
                                             LAYER_MODES["LSTM"] + STEP_PROJECTIONS, reverse,
                                             bs)
        return out, hy, cy
    assert ptl.autograd.gradcheck(f, tuple(t[n] for n in NAMES))


@pytest.mark.parametrize("threads", [1, 2])
def test_calls_never_share_buffers(threads):
    """Two forwards' outputs and workspaces kept alive are distinct memory with each call's
    own values; a backward after a second forward gives the first call's gradients; two
    modules interleaved do not disturb each other."""
    def run():
        a = _layer_arrays("LSTM", 40, 16, 32, seed=1, I=6)
        b = _layer_arrays("LSTM", 40, 16, 32, seed=2, I=6)
        ta, tb = _leaves(a, ptl.float32), _leaves(b, ptl.float32)
        first = _call(ta, True, False, None)
        alone = _results(a, ptl.float32, False)
        second = _call(tb, True, False, None)
        for u, v in zip(first, second):
            assert u.data_ptr() != v.data_ptr()
        for name, got in (("out", first[0]), ("hy", first[2]), ("cy", first[3])):
            np.testing.assert_array_equal(got.detach().numpy(), alone[name].numpy())
        rng = np.random.default_rng(0)
        loss = sum((o * _as(rng.standard_normal(tuple(o.shape)), ptl.float32)).sum()
                   for o in (first[0], first[2], first[3]))
        grads = ptl.autograd.grad(loss, list(ta.values()))
        for n, g in zip(ta, grads):
            np.testing.assert_array_equal(g.numpy(), alone[f"grad {n}"].numpy(), err_msg=n)
        m1, m2 = ptl.nn.LSTM(6, 8, 2), ptl.nn.LSTM(6, 8, 2)
        x = ptl.from_numpy(randn(20, 8, 6, seed=3).astype(np.float32)).requires_grad_()
        o1, o2 = m1(x)[0], m2(x)[0]
        o1b = m1(x)[0]
        np.testing.assert_array_equal(o1.detach().numpy(), o1b.detach().numpy())
        assert not np.array_equal(o1.detach().numpy(), o2.detach().numpy())
        (o1.sum() + o2.sum()).backward()
        g1 = [p.grad.clone() for p in m1.parameters()]
        for p in list(m1.parameters()) + list(m2.parameters()):
            p.grad = None
        m1(x)[0].sum().backward()
        for p, g in zip(m1.parameters(), g1):
            np.testing.assert_array_equal(p.grad.numpy(), g.numpy())
    _threads(threads, run)


def test_module_takes_the_form_when_x_and_w_ih_want_gradients(monkeypatch):
    """nn.LSTM's layers take the step projections with a gradient for x and W_ih (both
    layers of a 2-layer language model: layer 2's x is layer 1's output), and the same bits
    as with F.linear's projection; not for proj_size, a frozen W_ih or an x without one."""
    taken = []
    form = rnn._step_projections
    monkeypatch.setattr(rnn, "_step_projections",
                        lambda *args: taken.append(form(*args)) or taken[-1])
    m = ptl.nn.LSTM(5, 7, 2, bidirectional=True)
    x = ptl.from_numpy(randn(9, 4, 5, seed=4).astype(np.float32)).requires_grad_()

    def grads():
        for p in m.parameters():
            p.grad = None
        x.grad = None
        out, (h, c) = m(x)
        (out.sum() + 2 * h.sum() + 3 * c.sum()).backward()
        return [out.detach(), h.detach(), c.detach(), x.grad] + [p.grad for p in m.parameters()]
    got = grads()
    assert taken == [True] * 4
    monkeypatch.setattr(rnn, "_step_projections", lambda *args: False)
    for u, v in zip(got, grads()):
        np.testing.assert_array_equal(u.numpy(), v.numpy())
    monkeypatch.setattr(rnn, "_step_projections", lambda *args: taken.append(form(*args)) or
                        taken[-1])
    taken.clear()
    m(x.detach())
    ptl.nn.LSTM(5, 7, proj_size=3)(x)
    m.weight_ih_l0.requires_grad_(False)
    m(x)
    assert taken == [False, False, True, True, False, False, True, True, True]


def test_errors():
    a = _layer_arrays("LSTM", 3, 2, 4, seed=0, I=3)
    t = {n: _as(a[n], ptl.float64) for n in NAMES}
    mode = LAYER_MODES["LSTM"] + STEP_PROJECTIONS
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected tensor of size [16, 3], but got tensor of size [16, 2] for argument #7 "
            "'w_hr' (while checking arguments for _ptl_rnn_layer)")):
        aten._ptl_rnn_layer(t["x"], t["hx"], t["cx"], t["w_hh"], t["b_ih"], t["b_hh"],
                            t["w_ih"][:, :2], mode, False, None)
    with pytest.raises(RuntimeError, match="unknown mode 19"):
        aten._ptl_rnn_layer(t["x"], t["hx"], None, t["w_hh"][:12], None, None, t["w_ih"][:12],
                            LAYER_MODES["GRU"] + STEP_PROJECTIONS, False, None)
    with pytest.raises(RuntimeError, match="an LSTM needs cx"):
        aten._ptl_rnn_layer(t["x"], t["hx"], None, t["w_hh"], None, None, t["w_ih"], mode,
                            False, None)
