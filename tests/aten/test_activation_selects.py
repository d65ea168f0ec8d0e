"""The piecewise activations of Note [Select formulas] (src/aten/native/activation.c): each
piece is computed on every element and then selected, so that the contiguous loops vectorize
into compares and blends.  Their results must be those of the formulas taken branch by
branch: checked bit for bit (signed zeros and NaN included) against NumPy float64 on values
at and around every kink, NaN, infinities and signed zeros, on contiguous operands (the
vector loops), strided ones (the scalar loops) and lengths around the vector widths.  The
parameters here are exact in float32, since PyTorch rounds them to float32 (or to the
input's dtype) first, and so do we: test_bounds_are_compared_in_the_input_dtype."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch

KINKS = [-3.0, 3.0, -1.0, 1.0, -0.5, 0.5, 0.1, 2.0, 0.0, -0.0, 1e-30, -1e-30, np.nan,
         np.inf, -np.inf, 6.0, -6.0]


def inputs(n=301, seed=0):
    """x: every kink and its float32 neighbours, then random values; g: random with NaN,
    infinities and signed zeros mixed in."""
    rng = np.random.default_rng(seed)
    ks = np.array(KINKS, np.float32)
    near = np.concatenate([ks, np.nextafter(ks, np.float32(np.inf)),
                           np.nextafter(ks, np.float32(-np.inf))])
    x = np.concatenate([near, (rng.standard_normal(n) * 3).astype(np.float32)])
    g = (rng.standard_normal(x.size) * 2).astype(np.float32)
    g[rng.integers(0, x.size, 12)] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0] * 2
    return x.astype(np.float64), g.astype(np.float64)


def leaky(x, a):
    return np.where(x > 0, x, x * a)


FORWARD = {
    "leaky_relu": (lambda A, t: A.leaky_relu(t, 2 ** -6), lambda x: leaky(x, 2 ** -6)),
    "leaky_relu_negative_slope": (lambda A, t: A.leaky_relu(t, -0.25), lambda x: leaky(x, -0.25)),
    "hardtanh": (lambda A, t: A.hardtanh(t, -1.0, 1.0),
                 lambda x: np.where(np.where(x < -1, -1, x) > 1, 1, np.where(x < -1, -1, x))),
    "relu6": (lambda A, t: A.hardtanh(t, 0.0, 6.0),
              lambda x: np.where(np.where(x < 0, 0, x) > 6, 6, np.where(x < 0, 0, x))),
    "hardsigmoid": (lambda A, t: A.hardsigmoid(t),
                    lambda x: np.where(x + 3 < 0, 0, np.where(x + 3 > 6, 6, x + 3)) / 6),
    "hardswish": (lambda A, t: A.hardswish(t),
                  lambda x: x * np.where(x + 3 < 0, 0, np.where(x + 3 > 6, 6, x + 3)) / 6),
    "softshrink": (lambda A, t: A.softshrink(t, 0.5),
                   lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0 * x))),
    "hardshrink": (lambda A, t: A.hardshrink(t, 0.5),
                   lambda x: np.where((x >= -0.5) & (x <= 0.5), 0.0, x)),
    "threshold": (lambda A, t: A.threshold(t, 0.25, 20.0),
                  lambda x: np.where(x <= 0.25, 20.0, x)),
}

def _sixth(v):
    """v / 6; float32 multiplies by 1/6 rounded to float32, as PyTorch's kernel does."""
    return v * np.float32(1 / 6) if v.dtype == np.float32 else v / 6


BACKWARD = {
    "threshold_backward": (lambda A, g, t: A.threshold_backward(g, t, 0),
                           lambda g, x: np.where(x <= 0, 0.0, g)),
    "leaky_relu_backward": (lambda A, g, t: A.leaky_relu_backward(g, t, 2 ** -6, False),
                            lambda g, x: np.where(x > 0, g, g * 2 ** -6)),
    "hardtanh_backward": (lambda A, g, t: A.hardtanh_backward(g, t, -1.0, 1.0),
                          lambda g, x: np.where((x <= -1) | (x >= 1), 0.0, g)),
    "hardsigmoid_backward": (lambda A, g, t: A.hardsigmoid_backward(g, t),
                             lambda g, x: _sixth(np.where((x > -3) & (x < 3), g, 0.0))),
    "hardswish_backward": (lambda A, g, t: A.hardswish_backward(g, t),
                           lambda g, x: np.where(x <= -3, 0.0,
                                                 np.where(x < 3, g * (x / 3 + 0.5), g))),
    "softshrink_backward": (lambda A, g, t: A.softshrink_backward(g, t, 0.5),
                            lambda g, x: np.where((x >= -0.5) & (x <= 0.5), 0.0, g)),
    "hardshrink_backward": (lambda A, g, t: A.hardshrink_backward(g, t, 0.5),
                            lambda g, x: np.where((x >= -0.5) & (x <= 0.5), 0.0, g)),
}


# float32 formulas that round after each operation in float, in PyTorch's order (the others
# round once, so computing them in float64 and rounding gives the same bits)
ROUNDED_IN_FLOAT = {"hardswish", "hardsigmoid", "hardswish_backward", "hardsigmoid_backward"}


def reference(name, ref, args, np_dtype):
    """ref on float64 copies of args, rounded to np_dtype; for ROUNDED_IN_FLOAT in float32,
    on float32 arrays (NumPy keeps float32 with Python scalars)."""
    with np.errstate(invalid="ignore", over="ignore"):
        if np_dtype == np.float32 and name in ROUNDED_IN_FLOAT:
            return ref(*[a.astype(np.float32) for a in args]).astype(np.float32)
        return ref(*[a.astype(np.float64) for a in args]).astype(np_dtype)


def assert_same_bits(got, ref):
    got, ref = np.asarray(got), np.asarray(ref)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], ref[~nan])
    np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(ref[~nan]))


def layouts(a, dtype):
    """The contiguous array, and a strided view holding the same values."""
    t = ptl.tensor(a).to(dtype)
    wide = ptl.zeros(a.size * 2, dtype=dtype)
    wide[::2] = t
    return [("contiguous", t), ("strided", wide[::2])]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("name", sorted(FORWARD))
def test_forward_pieces(name, dtype):
    op, ref = FORWARD[name]
    x, _ = inputs()
    x = x.astype(np.float32).astype(np.float64) if dtype == ptl.float32 else x
    np_dtype = np.float32 if dtype == ptl.float32 else np.float64
    expect = reference(name, ref, [x], np_dtype)
    for layout, t in layouts(x, dtype):
        got = op(ptl.ops.aten, t)
        assert got.dtype == dtype, layout
        assert_same_bits(got.numpy(), expect)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("name", sorted(BACKWARD))
def test_backward_pieces(name, dtype):
    op, ref = BACKWARD[name]
    x, g = inputs(seed=1)
    np_dtype = np.float32 if dtype == ptl.float32 else np.float64
    x, g = x.astype(np_dtype).astype(np.float64), g.astype(np_dtype).astype(np.float64)
    expect = reference(name, ref, [g, x], np_dtype)
    for (layout, tx), (_, tg) in zip(layouts(x, dtype), layouts(g, dtype)):
        got = op(ptl.ops.aten, tg, tx)
        assert_same_bits(got.numpy(), expect)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 15, 16, 17, 31, 33])
def test_lengths_around_vector_widths(n):
    x, g = inputs(n=n, seed=n)
    x, g = x[-n:], g[-n:]
    xf, gf = x.astype(np.float32), g.astype(np.float32)
    for name in ("leaky_relu", "hardtanh", "softshrink", "hardswish", "threshold"):
        op, ref = FORWARD[name]
        assert_same_bits(op(ptl.ops.aten, ptl.tensor(xf)).numpy(),
                         reference(name, ref, [xf], np.float32))
    for name in ("hardswish_backward", "leaky_relu_backward", "hardsigmoid_backward"):
        op, ref = BACKWARD[name]
        assert_same_bits(op(ptl.ops.aten, ptl.tensor(gf), ptl.tensor(xf)).numpy(),
                         reference(name, ref, [gf, xf], np.float32))


@pytest.mark.parametrize("dtype,np_dtype", [(ptl.float32, np.float32),
                                            (ptl.float64, np.float64),
                                            (ptl.float16, np.float16)])
def test_bounds_are_compared_in_the_input_dtype(dtype, np_dtype):
    # PyTorch converts threshold, hardtanh's and the shrinks' bounds to the input's dtype
    # before comparing: float32 0.1f <= threshold 0.1 holds there, though 0.1f > 0.1
    for t in (0.1, 0.1001, 1 / 3, 2.7):
        b = np_dtype(t)
        x = np.array([np.nextafter(b, np_dtype(-np.inf)), b, np.nextafter(b, np_dtype(np.inf))],
                     np_dtype)
        tx = ptl.tensor(x.astype(np.float64)).to(dtype)
        got = ptl.ops.aten.threshold(tx, t, 20.0).to(ptl.float64).numpy()
        np.testing.assert_array_equal(got, np.where(x <= b, 20.0, x).astype(np.float64))
        got = ptl.ops.aten.threshold_backward(ptl.ones(3, dtype=dtype), tx, t)
        np.testing.assert_array_equal(got.to(ptl.float64).numpy(), np.where(x <= b, 0.0, 1.0))
        got = ptl.ops.aten.hardtanh(tx, -1.0, t).to(ptl.float64).numpy()
        np.testing.assert_array_equal(got, np.minimum(x, b).astype(np.float64))
        got = ptl.ops.aten.hardshrink(tx, t).to(ptl.float64).numpy()
        np.testing.assert_array_equal(got, np.where(x <= b, 0.0, x).astype(np.float64))
        if torch is not None:
            tt = torch.tensor(x)
            np.testing.assert_array_equal(
                ptl.ops.aten.threshold(tx, t, 20.0).to(ptl.float64).numpy(),
                torch.ops.aten.threshold(tt, t, 20.0).double().numpy())


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.float16, ptl.bfloat16],
                         ids=str)
def test_hardtanh_with_a_nan_bound_is_nan_everywhere(dtype):
    """PyTorch's hardtanh is clamp, and a NaN bound makes every element NaN (in place too);
    the select loops passed over it (fuzzer --torch seed 72, call 744)"""
    x = ptl.tensor([-5.0, -1.0, 0.0, 5.0, np.nan]).to(dtype)
    nan = float("nan")
    for lo, hi in ((nan, -3.74), (-1.0, nan), (nan, nan)):
        assert np.isnan(ptl.ops.aten.hardtanh(x, lo, hi).to(ptl.float64).numpy()).all()
        y = x.clone()
        assert ptl.ops.aten.hardtanh_(y, lo, hi) is y
        assert np.isnan(y.to(ptl.float64).numpy()).all()
        if torch is not None:
            tx = torch.tensor([-5.0, -1.0, 0.0, 5.0, np.nan])
            assert torch.ops.aten.hardtanh(tx, lo, hi).isnan().all()
    # an integer tensor keeps its select (a NaN bound converts, as PyTorch's clamp refuses it)
    assert ptl.ops.aten.hardtanh(x, -1.0, 1.0).to(ptl.float64).numpy()[1] == -1.0


def test_hardtanh_op_with_min_above_max_is_clamp():
    # F.hardtanh refuses min_val > max_val; the aten op does not and, as PyTorch's clamp,
    # gives max_val everywhere but NaN
    got = ptl.ops.aten.hardtanh(ptl.tensor([-5.0, 0.0, 1.5, 5.0, np.nan]), 2.0, 1.0).numpy()
    assert_same_bits(got, np.array([1.0, 1.0, 1.0, 1.0, np.nan], np.float32))
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        ptl.nn.functional.hardtanh(ptl.tensor([1.0]), 2.0, 1.0)


@pytest.mark.torch_ref
@pytest.mark.parametrize("name", sorted(FORWARD) + sorted(BACKWARD))
def test_finite_values_match_torch(name):
    x, g = inputs(seed=2)
    finite = np.isfinite(x) & np.isfinite(g)
    x, g = x[finite].astype(np.float32), g[finite].astype(np.float32)
    results = []
    for lib in (ptl, torch):
        if name in FORWARD:
            results.append(FORWARD[name][0](lib.ops.aten, lib.tensor(x)).numpy())
        else:
            results.append(BACKWARD[name][0](lib.ops.aten, lib.tensor(g), lib.tensor(x)).numpy())
    # PyTorch's vector softshrink gives +0 between the bounds where we give 0 * x (-0 for
    # x < 0, as its scalar tail does)
    if name == "softshrink":
        np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=0)
    else:
        assert_same_bits(results[0], results[1])


def _hardswish_f32(x):
    with np.errstate(invalid="ignore", over="ignore"):
        return x * np.clip(x + np.float32(3), np.float32(0), np.float32(6)) / np.float32(6)


@pytest.mark.parametrize("cap", [None, "avx2", "default"])
def test_hardswish_sixth_is_the_division(cap):
    """float32 hardswish's vector loops divide by 6 as m HI + m LO (Note [Hardswish
    sixth]): PyTorch's bits on a sample of all floats, the ranges where m's quotient is
    subnormal or m overflows, and x across the tiny-x threshold 2^-120 (whose vectors
    divide), with NaN and zeros mixed into vectors; in a subprocess at each vector width."""
    import os
    import subprocess
    import sys
    from helpers import ROOT
    script = r'''
import sys, numpy as np, pytorchlite as ptl
u = np.arange(0, 2 ** 32, 4099, dtype=np.uint64).astype(np.uint32)
f = np.float32
edge = np.concatenate([np.ldexp(f(1), np.arange(-149, 128)).astype(f), [f(2 ** -120)] * 3])
edge = np.concatenate([edge, np.nextafter(edge, f(0)), np.nextafter(edge, f(np.inf))])
x = np.concatenate([u.view(f), edge, -edge, np.float32([0, -0.0, np.inf, -np.inf, np.nan])])
x = np.concatenate([x, np.resize(np.float32([1.5, 2 ** -121, -7, np.nan]), 37)])
sys.stdout.buffer.write(ptl.nn.functional.hardswish(ptl.tensor(x)).numpy().tobytes())
sys.stdout.buffer.write(x.tobytes())
'''
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PTL_CPU_CAPABILITY", None)
    if cap is not None:
        env["PTL_CPU_CAPABILITY"] = cap
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    half = len(r.stdout) // 2
    got = np.frombuffer(r.stdout[:half], np.float32)
    x = np.frombuffer(r.stdout[half:], np.float32)
    assert_same_bits(got, _hardswish_f32(x))
    if torch is not None:
        want = torch.nn.functional.hardswish(torch.tensor(x)).numpy()
        assert_same_bits(got, want)


@pytest.mark.parametrize("gdtype", [ptl.uint8, ptl.int64, ptl.bool, ptl.float32], ids=str)
def test_a_backward_compares_in_the_dtype_it_computes_in(gdtype):
    # the backward of an integer (or float32) grad_output and a float64 self computes in
    # float64, and PyTorch converts the bounds to that dtype: an integer grad_output once
    # truncated lambda 0.15 to 0, so that softshrink_backward masked nothing (tools/fuzz
    # --torch seed 12, call 440), and a float32 one rounded 0.1 up to 0.1f
    x = np.array([-0.1145, 0.5, 0.1, -0.3, 0.15, -0.15, 0.10000000075, 0.1000000016])
    tx = ptl.tensor(x)
    g = ptl.ones(x.size, dtype=gdtype)
    for name, args, keep in [
            ("softshrink_backward", (0.15,), np.abs(x) > 0.15),
            ("hardshrink_backward", (0.15,), np.abs(x) > 0.15),
            ("threshold_backward", (0.15,), x > 0.15),
            ("threshold_backward", (0.1,), x > 0.1),
            ("hardtanh_backward", (-0.15, 0.1), (x > -0.15) & (x < 0.1))]:
        got = getattr(ptl.ops.aten, name)(g, tx, *args)
        assert got.dtype == ptl.float64, name
        np.testing.assert_array_equal(got.numpy(), keep.astype(np.float64), err_msg=name)
        if torch is not None:
            want = getattr(torch.ops.aten, name)(torch.ones(x.size, dtype=getattr(
                torch, str(gdtype).split(".")[1])), torch.tensor(x), *args)
            np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)
