"""The AVX-512 and AVX2 forms of vec_math.h's formulas (Note [Vector twins]) give the same bits:
every float32 routine (exp, expm1, sigmoid, tanh, erf, log, log1p, sinh, cosh, gelu in both
forms, silu, elu with selu's and celu's parameters, softplus, logsigmoid (and its buffer),
mish, their backwards, hardswish, exp2, log2, tan, atan, erfc, asin, i0), float64 exp, sin,
cos, tanh, sigmoid, log2, tan and exp2, softmax and log_softmax rows and columns (forward and
backward, float32 and float64), logsumexp's rows and columns, and every pointwise-program
instruction run in a subprocess with PTL_CPU_CAPABILITY=avx2 and in one with the CPU's own
capability, on random values plus the specials and the edges of each formula's ranges, at
every tail length from 0 to 40, around 1e5 and on strided inputs. The fused program equals
eager mode bit for bit at either width, and a result does not depend on the thread count
(Note [Vector activations])."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import ROOT

HAS_AVX512 = ptl.backends.cpu.get_cpu_capability() == "AVX512"

# Writes, for every routine, its float32 results on the points, on every prefix length in
# LENGTHS and on the strided view x[::3], as raw bytes; then float64 exp's.
SCRIPT = r"""
import sys, numpy as np, pytorchlite as ptl
F = ptl.nn.functional
def edges():
    f = np.float32
    base = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, -1e-40,
            np.finfo(f).tiny, -np.finfo(f).tiny, np.finfo(f).max, -np.finfo(f).max,
            88.72283935546875, -103.972084045410, -86.0, 88.0, 20.0, -20.0, 87.0, -87.4,
            0.625, -0.625, 1.0, -1.0, 0.34657359, -0.34657359, 1.0397208, -1.0397208,
            16.63553, -17.33, -40.0, 44.4, 1.4142135, 2 ** 0.5 * 3.93, -(2 ** 0.5) * 3.93, 3.93,
            -3.93, 5.56, -5.56, -5.5, -3.0, -80.0, 80.0, -7.0, 10.0, 1e30, -1e30, 1e-30]
    pts = np.array(base, f)
    return np.concatenate([pts, np.nextafter(pts, f(np.inf)), np.nextafter(pts, f(-np.inf))])
rng = np.random.default_rng(5)
x = np.concatenate([edges(), rng.standard_normal(30011).astype(np.float32) * 4,
                    rng.uniform(-110, 100, 30011).astype(np.float32)])
rng.shuffle(x)
g = rng.standard_normal(x.size).astype(np.float32)
LENGTHS = list(range(41)) + list(range(99990, 100020))
xl = np.resize(x, 100020)
gl = np.resize(g, 100020)
ops = [("exp", ptl.exp), ("sigmoid", ptl.sigmoid), ("tanh", ptl.tanh), ("erf", ptl.erf),
       ("log", lambda t: ptl.log(t)), ("gelu", F.gelu),
       ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh")), ("silu", F.silu),
       ("expm1", ptl.expm1), ("elu", F.elu), ("selu", F.selu),
       ("celu", lambda t: F.celu(t, 0.7)), ("celu_neg", lambda t: F.celu(t, -0.5)),
       ("log1p", ptl.log1p), ("sinh", ptl.sinh), ("cosh", ptl.cosh), ("softplus", F.softplus),
       ("softplus_b2", lambda t: F.softplus(t, 2.0, 30.0)), ("logsigmoid", F.logsigmoid),
       ("logsigmoid_buffer", lambda t: ptl.ops.aten.log_sigmoid_forward(t)[1]),
       ("mish", F.mish), ("hardswish", F.hardswish), ("exp2", ptl.exp2), ("log2", ptl.log2),
       ("tan", ptl.tan), ("atan", ptl.atan), ("erfc", ptl.erfc),
       ("asin", ptl.asin), ("i0", ptl.i0)]
grads = [("gelu_bw", lambda g, t: ptl.ops.aten.gelu_backward(g, t)),
         ("gelu_tanh_bw", lambda g, t: ptl.ops.aten.gelu_backward(g, t, approximate="tanh")),
         ("silu_bw", lambda g, t: ptl.ops.aten.silu_backward(g, t)),
         ("selu_bw", lambda g, t: ptl.ops.aten.elu_backward(g, 1.6732632, 1.0507010, 1, False, t)),
         ("celu_bw", lambda g, t: ptl.ops.aten.elu_backward(g, -0.5, 1, -2.0, False, t)),
         ("elu_result_bw", lambda g, t: ptl.ops.aten.elu_backward(g, 0.7, 1, 1 / 0.7, True, t)),
         ("softplus_bw", lambda g, t: ptl.ops.aten.softplus_backward(g, t, 2.0, 30.0)),
         ("logsigmoid_bw", lambda g, t: ptl.ops.aten.log_sigmoid_backward(
             g, t, ptl.ops.aten.log_sigmoid_forward(t)[1])),
         ("mish_bw", lambda g, t: ptl.ops.aten.mish_backward(g, t))]
out = sys.stdout.buffer
def emit(t):
    out.write(t.numpy().tobytes())
for name, f in ops:
    emit(f(ptl.tensor(x)))
    emit(f(ptl.tensor(x)[::3]))
    for n in LENGTHS:
        emit(f(ptl.tensor(xl[:n])))
for name, f in grads:
    emit(f(ptl.tensor(g), ptl.tensor(x)))
    emit(f(ptl.tensor([1.5], dtype=ptl.float32).expand(x.size), ptl.tensor(x)))
    for n in LENGTHS:
        emit(f(ptl.tensor(gl[:n]), ptl.tensor(xl[:n])))
codes = ptl.jit.passes._PROGRAM_OPS
y = ptl.tensor(np.roll(x, 7))
for op, code in sorted(codes.items()):
    for n in (x.size, 16, 17, 255, 257):
        emit(ptl._C._jit_run_pointwise_program([(code, 0, 1)], [ptl.tensor(x[:n]), y[:n]], []))
# softmax and log_softmax rows, forward and backward (Note [Softmax row sums]): row lengths
# across the 16 partial sums and the masked tails, float32 and float64
for dt in (ptl.float32, ptl.float64):
    for n in list(range(1, 41)) + [65, 1000]:
        xs = ptl.tensor(np.resize(x, 3 * n).reshape(3, n) % 60, dtype=dt)
        gs = ptl.tensor(np.resize(g, 3 * n).reshape(3, n), dtype=dt)
        for op, bw in ((ptl.softmax, ptl.ops.aten._softmax_backward_data),
                       (ptl.log_softmax, ptl.ops.aten._log_softmax_backward_data)):
            y = op(xs, -1)
            emit(y)
            emit(bw(gs, y, -1, dt))
# softmax, log_softmax (forward and backward) and logsumexp over an outer dim (Note [Softmax
# columns]), and logsumexp of contiguous rows: column counts across the lanes, the masked
# tails and SM_COLS
for dt in (ptl.float32, ptl.float64):
    for inner in list(range(1, 41)) + [127, 128, 129, 300]:
        xs = ptl.tensor(np.resize(x, 37 * inner).reshape(37, inner) % 60, dtype=dt)
        gs = ptl.tensor(np.resize(g, 37 * inner).reshape(37, inner), dtype=dt)
        for f in (lambda t: ptl.softmax(t, 0), lambda t: ptl.log_softmax(t, 0),
                  lambda t: t.logsumexp(0), lambda t: t.logsumexp(1)):
            emit(f(xs))
        for op, bw in ((ptl.softmax, ptl.ops.aten._softmax_backward_data),
                       (ptl.log_softmax, ptl.ops.aten._log_softmax_backward_data)):
            emit(bw(gs, op(xs, 0), 0, dt))
x8 = np.concatenate([x.astype(np.float64) * 8, [709.78, -745.13, 5e-324, -707.5, 709.5]])
emit(ptl.exp(ptl.tensor(x8)))
for n in range(41):
    emit(ptl.exp(ptl.tensor(x8[:n])))
# float64 sin, cos, tanh, sigmoid (Note [Vector float64 sin, cos, tanh, sigmoid]): the slow
# lanes (huge, near multiples of pi/2, sigmoid's x < -708) among fast ones
x64 = np.concatenate([x.astype(np.float64) * 3, x.astype(np.float64) * 1e5,
                      np.arange(1, 2000) * (np.pi / 2), [1e22, -1e22, 2.0 ** 20, -709.9, 19.5,
                                                         -0.0, 5e-324, 38.0, -745.5]])
rng.shuffle(x64)
for f in (ptl.sin, ptl.cos, ptl.tanh, ptl.sigmoid, ptl.log2, ptl.tan, ptl.exp2):
    emit(f(ptl.tensor(x64)))
    emit(f(ptl.tensor(x64)[::3]))
    for n in range(41):
        emit(f(ptl.tensor(x64[:n])))
"""


def _run(cap, threads=1):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    if cap is None:
        env.pop("PTL_CPU_CAPABILITY", None)
    else:
        env["PTL_CPU_CAPABILITY"] = cap
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return r.stdout


@pytest.mark.skipif(not HAS_AVX512, reason="this CPU has no AVX-512 to compare with AVX2")
def test_avx512_equals_avx2_bit_for_bit():
    wide, narrow = _run(None), _run("avx2")
    assert len(wide) == len(narrow) > 10**6
    a = np.frombuffer(wide, np.uint8)
    b = np.frombuffer(narrow, np.uint8)
    diff = np.nonzero(a != b)[0]
    assert diff.size == 0, f"{diff.size} bytes differ, the first at byte {diff[:1]}"


@pytest.mark.skipif(os.environ.get("PTL_CPU_CAPABILITY") == "default" or
                    ptl.backends.cpu.get_cpu_capability() == "DEFAULT",
                    reason="the vector loops are off on this run")
def test_results_do_not_depend_on_the_thread_count():
    """gelu and silu redo out-of-range elements alone, so where the threads split the array
    (here 1 against 2 threads, whose chunks start at different offsets) changes nothing."""
    assert _run(None, threads=1) == _run(None, threads=2)


def _check_prefix_and_strided(name, f, x):
    """A prefix of length n and a strided view give the contiguous full result's elements
    (the vector loops and their masked tails compute each element alone)."""
    full = f(ptl.tensor(x)).numpy()
    for n in list(range(41)) + [16383, 16385]:
        got = f(ptl.tensor(x[:n])).numpy()
        np.testing.assert_array_equal(got.view(np.uint32), full[:n].view(np.uint32),
                                      err_msg=f"{name} n={n}")
    return full


ACTIVATIONS = ("gelu", "silu", "elu", "selu", "celu", "softplus", "logsigmoid", "mish")


@pytest.mark.parametrize("name", ["exp", "expm1", "sigmoid", "tanh", "erf", "log", "log1p",
                                  "sinh", "cosh"] + list(ACTIVATIONS))
def test_every_tail_length_and_strided_input(name):
    F = ptl.nn.functional
    f = getattr(F, name) if name in ACTIVATIONS else getattr(ptl, name)
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.standard_normal(20000) * 4, [-7.0, -90.0, np.nan, 0.7]])
    x = x.astype(np.float32)
    if name in ("log", "log1p"):
        x = np.abs(x)
    full = _check_prefix_and_strided(name, f, x)
    x64 = x.astype(np.float64)
    ref = {"exp": np.exp, "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh,
           "log": np.log, "silu": lambda v: v / (1 + np.exp(-v)), "expm1": np.expm1,
           "elu": lambda v: np.where(v > 0, v, np.expm1(v)), "log1p": np.log1p,
           # rounded to float32: sinh(-90) and cosh(-90) overflow it
           "sinh": lambda v: np.sinh(v).astype(np.float32),
           "cosh": lambda v: np.cosh(v).astype(np.float32),
           "logsigmoid": lambda v: np.minimum(v, 0) - np.log1p(np.exp(-np.abs(v)))}
    if name in ref:
        with np.errstate(all="ignore"):
            r = ref[name](x64)
        np.testing.assert_allclose(full, r, rtol=2e-6, atol=1e-30, equal_nan=True)
    # a strided view (the portable loops) against NumPy in float64
    s = ptl.tensor(x)[::3]
    got = f(s).numpy()
    np.testing.assert_allclose(got, full[::3], rtol=4e-6, atol=1e-7, equal_nan=True)


@pytest.mark.parametrize("n", [16, 17, 31, 255, 256, 257, 1000])
def test_fused_program_equals_eager_at_every_width_boundary(n):
    """exp, sigmoid and tanh in a program are eager mode's formulas, the arithmetic lane by
    lane; lengths across the 16-lane AVX-512 group and the 256-element block."""
    rng = np.random.default_rng(n)
    x = ptl.tensor((rng.standard_normal(n) * 6).astype(np.float32))
    for op in ("exp", "sigmoid", "tanh"):
        code = ptl.jit.passes._PROGRAM_OPS[op]
        out = ptl._C._jit_run_pointwise_program([(code, 0, 0)], [x], [])
        np.testing.assert_array_equal(out.numpy().view(np.uint32),
                                      getattr(ptl, op)(x).numpy().view(np.uint32))
