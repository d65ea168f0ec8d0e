"""native_layer_norm / native_layer_norm_backward (src/aten/native/layer_norm.c) against a
NumPy float64 reference on every float dtype and layout, their derivative and double-backward
rows (gradcheck, gradgradcheck), nn.LayerNorm's node, and the errors."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck, gradgradcheck
from golden import golden
from helpers import (FLOAT_DTYPES, INT_DTYPES, LAYOUTS, ROOT, assert_close, assert_no_leak,
                     assert_raises_like_torch, make, torch)


# ---- layer norm ----

def ln_ref(x, k, w=None, b=None, eps=1e-5):
    """NumPy float64 layer norm over the last k dims: (out, mean, rstd)."""
    x, w, b = (None if a is None else np.asarray(a, np.float64) for a in (x, w, b))
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    out = (x - mean) * rstd
    if w is not None:
        out = out * w
    if b is not None:
        out = out + b
    return out, mean, rstd


def ln_backward_ref(g, x, k, w=None, eps=1e-5):
    """float64 gradients of sum(g * layer_norm(x)) for input, weight and bias."""
    g, x, w = (None if a is None else np.asarray(a, np.float64) for a in (g, x, w))
    axes = tuple(range(x.ndim - k, x.ndim))
    lead = tuple(range(x.ndim - k))
    n = int(np.prod(x.shape[x.ndim - k:]))
    _, mean, rstd = ln_ref(x, k, eps=eps)
    xhat = (x - mean) * rstd
    gw = g * (w if w is not None else 1.0)
    gx = rstd * (gw - gw.sum(axis=axes, keepdims=True) / n
                 - xhat * (gw * xhat).sum(axis=axes, keepdims=True) / n)
    return gx, (g * xhat).sum(axis=lead), g.sum(axis=lead)


LN_SHAPES = [((4, 6), 1), ((3, 5, 7), 1), ((3, 5, 7), 2), ((2, 3, 4, 5), 3), ((0, 5), 1),
             ((5,), 1), ((2, 37), 1), ((64, 65), 1)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, k", LN_SHAPES)
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_native_layer_norm(dtype, layout, shape, k, affine):
    x, xa = make(shape, dtype, layout, seed=1)
    ns = list(shape[len(shape) - k:])
    w, wa = make(ns, dtype, seed=2) if affine[0] else (None, None)
    b, ba = make(ns, dtype, seed=3) if affine[1] else (None, None)
    out, mean, rstd = ptl.native_layer_norm(x, ns, w, b, 1e-5)
    eo, em, er = ln_ref(xa, k, wa, ba)
    assert_close(out, eo, dtype=dtype)
    assert_close(mean, em, dtype=dtype)
    assert_close(rstd, er, dtype=dtype, rtol=TOL_RSTD.get(dtype))
    assert_close(F.layer_norm(x, ns, w, b), eo, dtype=dtype)


TOL_RSTD = {ptl.float16: 2e-2, ptl.bfloat16: 3e-2}


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, k", LN_SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_backward(dtype, layout, shape, k, affine):
    x, xa = make(shape, dtype, layout, seed=4)
    g, ga = make(shape, dtype, seed=5)
    ns = list(shape[len(shape) - k:])
    w, wa = make(ns, dtype, seed=6) if affine else (None, None)
    b = make(ns, dtype, seed=7)[0] if affine else None
    x.requires_grad_(True)
    if affine:
        w.requires_grad_(True)
        b.requires_grad_(True)
    F.layer_norm(x, ns, w, b).backward(g)
    gx, gw, gb = ln_backward_ref(ga, xa, k, wa)
    tol = 2e-4 if dtype == ptl.float32 else None
    assert_close(x.grad, gx, dtype=dtype, rtol=tol, atol=tol)
    if affine:
        assert_close(w.grad, gw, dtype=dtype, rtol=tol, atol=tol)
        assert_close(b.grad, gb, dtype=dtype, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16])
def test_layer_norm_mixed_dtype(dtype):
    # reduced-precision input with float32 weight and bias: float32 mean and rstd
    x, xa = make((3, 6), dtype, seed=11)
    w, wa = make((6,), ptl.float32, seed=12)
    b, ba = make((6,), ptl.float32, seed=13)
    out, mean, rstd = ptl.native_layer_norm(x, [6], w, b, 1e-5)
    eo, em, er = ln_ref(xa, 1, wa, ba)
    assert_close(out, eo, dtype=dtype)
    assert_close(mean, em, dtype=ptl.float32)
    assert_close(rstd, er, dtype=ptl.float32, rtol=1e-4)
    name = lambda d: str(d).split(".")[-1]
    want = golden(lambda: [name(t.dtype) for t in torch.native_layer_norm(
        torch.tensor(np.asarray(xa, np.float32)).to(getattr(torch, name(dtype))), [6],
        torch.tensor(wa), torch.tensor(ba), 1e-5)])
    assert want == [name(t.dtype) for t in (out, mean, rstd)]


def test_layer_norm_float32_accuracy():
    # rows with a large offset: float32 sums would lose the variance; ours are in double
    rs = np.random.RandomState(0)
    xa = (1000.0 + rs.randn(16, 300)).astype(np.float32)
    out, mean, rstd = ptl.native_layer_norm(ptl.tensor(xa), [300], None, None, 1e-5)
    eo, em, er = ln_ref(xa.astype(np.float64), 1)
    assert_close(mean, em, rtol=1e-6, atol=0)
    assert_close(rstd, er, rtol=1e-5, atol=0)
    assert_close(out, eo, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("offset", [0.0, 1000.0])
@pytest.mark.parametrize("n", [10000, 100003])
def test_layer_norm_float32_input_gradient_long_rows(offset, n):
    # float32 rows sum g and g (x - mean) in float (sixteen partial sums, added in double):
    # long rows, and rows whose mean dwarfs their spread, stay within the float32 tolerance
    rs = np.random.RandomState(1)
    xa = (offset + rs.randn(3, n)).astype(np.float32)
    ga, wa = rs.randn(3, n).astype(np.float32), rs.randn(n).astype(np.float32)
    x = ptl.tensor(xa).requires_grad_(True)
    F.layer_norm(x, [n], ptl.tensor(wa)).backward(ptl.tensor(ga))
    assert_close(x.grad, ln_backward_ref(ga, xa, 1, wa)[0], rtol=2e-4, atol=2e-4)


# Row lengths around the eight partial sums and the vector widths; the forward and the three
# gradients of each, as raw bytes, in float32 and float64.
WIDTH_SCRIPT = r"""
import sys, numpy as np, pytorchlite as ptl
rng = np.random.default_rng(7)
out = []
for dt in (ptl.float32, ptl.float64):
    for n in list(range(1, 26)) + [127, 128, 129, 1000]:
        x = ptl.tensor(rng.standard_normal((5, n)) * 3 + 1, dtype=dt)
        w = ptl.tensor(rng.standard_normal(n), dtype=dt)
        b = ptl.tensor(rng.standard_normal(n), dtype=dt)
        g = ptl.tensor(rng.standard_normal((5, n)), dtype=dt)
        y, mean, rstd = ptl.ops.aten.native_layer_norm(x, [n], w, b, 1e-5)
        grads = ptl.ops.aten.native_layer_norm_backward(g, x, [n], mean, rstd, w, b, [1, 1, 1])
        dx = ptl.ops.aten.native_layer_norm_backward(g, x, [n], mean, rstd, None, None,
                                                     [1, 0, 0])[0]
        for t in (y, mean, rstd, dx) + tuple(grads):
            out.append(t.numpy().tobytes())
sys.stdout.buffer.write(b"".join(out))
"""


def test_layer_norm_same_bits_at_every_vector_width():
    """The baseline and AVX2 twins of the row passes (layer_norm.c's ln_pass) sum the same
    eight partial sums in the same order: the same bits."""
    runs = []
    for cap in ("default", "avx2"):
        env = dict(os.environ, PTL_CPU_CAPABILITY=cap, PYTHONPATH=ROOT)
        runs.append(subprocess.run([sys.executable, "-c", WIDTH_SCRIPT], env=env, check=True,
                                   capture_output=True).stdout)
    assert len(runs[0]) > 0 and runs[0] == runs[1]


def test_layer_norm_module_and_node():
    m = ptl.nn.LayerNorm(8)
    x = ptl.randn(3, 8, requires_grad=True)
    y = m(x)
    assert type(y.grad_fn).__name__ == "NativeLayerNormBackward0"
    g = ptl.autograd.grad(y.sum() * 0 + (y * y).sum(), x, create_graph=True)[0]
    assert type(g.grad_fn).__name__ == "NativeLayerNormBackwardBackward0"
    assert_no_leak(lambda: m(x).sum().backward())


def _ln_inputs(shape, k, affine, layout):
    x = make(shape, ptl.float64, layout, seed=8)[0].requires_grad_(True)
    ns = list(shape[len(shape) - k:])
    w = make(ns, ptl.float64, seed=9)[0].requires_grad_(True) if affine else None
    b = make(ns, ptl.float64, seed=10)[0].requires_grad_(True) if affine else None
    return x, ns, w, b


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("shape, k", [((3, 4), 1), ((2, 3, 4), 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_native_layer_norm_gradcheck(layout, shape, k, affine):
    x, ns, w, b = _ln_inputs(shape, k, affine, layout)
    inputs = (x, w, b) if affine else (x,)

    def fn(x, w=None, b=None):
        # all three outputs: the mean and rstd gradients are checked too
        return ptl.native_layer_norm(x, ns, w, b, 1e-5)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_native_layer_norm_broadcast_gradcheck():
    # input, weight and bias expanded (stride 0) inside the function
    x = ptl.randn(3, 1, dtype=ptl.float64, requires_grad=True)
    w0 = ptl.randn(1, dtype=ptl.float64, requires_grad=True)
    b0 = ptl.randn(1, dtype=ptl.float64, requires_grad=True)
    fn = lambda x, w0, b0: F.layer_norm(x.expand(3, 5) * ptl.arange(5.0, dtype=ptl.float64),
                                        [5], w0.expand(5), b0.expand(5))
    assert gradcheck(fn, (x, w0, b0))
    assert gradgradcheck(fn, (x, w0, b0))


@pytest.mark.parametrize("mask", [(1, 1, 1), (1, 0, 0), (0, 1, 1), (0, 0, 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_native_layer_norm_backward_gradcheck(mask, affine):
    # native_layer_norm_backward called directly (mean and rstd given as constants)
    x, ns, w, b = _ln_inputs((3, 4), 1, affine, "transposed")
    g = ptl.randn(3, 4, dtype=ptl.float64, requires_grad=True)
    _, mean, rstd = ptl.native_layer_norm(x.detach(), ns, w, b, 1e-5)

    def fn(g, x, *wb):
        w, b = wb if affine else (None, None)
        xm = x - x.mean(1, keepdim=True)
        # mean and rstd recomputed from x so that they follow x in the numerical jacobian
        r = 1 / ((xm * xm).mean(1, keepdim=True) + 1e-5).sqrt()
        outs = ptl.ops.aten.native_layer_norm_backward(g, x, ns, x.mean(1, keepdim=True), r,
                                                       w, b, list(mask))
        return tuple(o for o in outs if o is not None)
    inputs = (g, x, w, b) if affine else (g, x)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_layer_norm_grads_like_torch():
    # ties: constant rows (var 0) and repeated values
    xa = np.array([[1.0, 1.0, 1.0, 1.0], [2.0, 2.0, -1.0, -1.0], [0.0, 3.0, 3.0, 3.0]])
    wa = np.array([0.5, -1.0, 2.0, 1.5])
    ga = np.array([[1.0, -2.0, 0.5, 3.0], [0.0, 1.0, 1.0, 0.0], [2.0, 2.0, 2.0, -1.0]])
    def results(lib):
        x = lib.tensor(xa, requires_grad=True)
        w = lib.tensor(wa, requires_grad=True)
        b = lib.zeros(4, dtype=lib.float64, requires_grad=True)
        y = lib.nn.functional.layer_norm(x, [4], w, b)
        gx, = lib.autograd.grad((y * lib.tensor(ga)).sum(), x, create_graph=True)
        (gx * gx).sum().backward()
        assert b.grad is None
        return [t.detach().tolist() for t in (y, gx, x.grad, w.grad)]
    for a, e in zip(results(ptl), golden(lambda: results(torch))):
        np.testing.assert_allclose(np.array(a), np.array(e), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dtype", INT_DTYPES + [ptl.bool])
def test_layer_norm_rejects_dtype(dtype):
    name = {ptl.bool: "Bool", ptl.uint8: "Byte", ptl.int8: "Char", ptl.int16: "Short",
            ptl.int32: "Int", ptl.int64: "Long"}[dtype]
    assert_raises_like_torch(
        lambda m: m.native_layer_norm(m.ones(2, 4, dtype=getattr(m, str(dtype)[6:])), [4],
                                      None, None, 1e-5),
        NotImplementedError, f'"LayerNormKernelImpl" not implemented for \'{name}\'')


@pytest.mark.parametrize("fn, msg", [
    (lambda m, x: m.native_layer_norm(x, [5], None, None, 1e-5),
     "Given normalized_shape=[5], expected input with shape [*, 5], but got input of size"
     "[2, 3, 4]"),
    (lambda m, x: m.nn.functional.layer_norm(x, [2, 4]),
     "Given normalized_shape=[2, 4], expected input with shape [*, 2, 4], but got input of "
     "size[2, 3, 4]"),
    (lambda m, x: m.native_layer_norm(x, [], None, None, 1e-5),
     "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
     "element, but got normalized_shape = []"),
    (lambda m, x: m.native_layer_norm(x, [4], m.ones(3), None, 1e-5),
     "Expected weight to be of same shape as normalized_shape, but got weight of shape [3] "
     "and normalized_shape = [4]"),
    (lambda m, x: m.native_layer_norm(x, [3, 4], m.ones(4), None, 1e-5),
     "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] "
     "and normalized_shape = [3, 4]"),
    (lambda m, x: m.native_layer_norm(x, [4], None, m.ones(2, 2), 1e-5),
     "Expected bias to be of same shape as normalized_shape, but got bias of shape [2, 2] and "
     "normalized_shape = [4]"),
    (lambda m, x: m.native_layer_norm(x, [4], m.ones(4, dtype=m.float64), None, 1e-5),
     "mixed dtype (CPU): expect parameter to have scalar type of Float"),
    (lambda m, x: m.native_layer_norm(x.double(), [4], m.ones(4), None, 1e-5),
     "mixed dtype (CPU): all inputs must share same datatype."),
    (lambda m, x: m.native_layer_norm(x.half(), [4], None, m.ones(4, dtype=m.bfloat16), 1e-5),
     "mixed dtype (CPU): expect parameter to have scalar type of Float"),
])
def test_layer_norm_errors(fn, msg):
    assert_raises_like_torch(lambda m: fn(m, m.zeros(2, 3, 4)), RuntimeError, msg)


def test_layer_norm_backward_errors():
    x = ptl.zeros(2, 4)
    mean, rstd = ptl.zeros(2, 1), ptl.ones(2, 1)
    with pytest.raises(RuntimeError, match=re.escape(
            "native_layer_norm_backward: grad_out of size [2, 3] does not match input of size "
            "[2, 4]")):
        ptl.ops.aten.native_layer_norm_backward(ptl.zeros(2, 3), x, [4], mean, rstd, None,
                                                None, [1, 1, 1])
    with pytest.raises(RuntimeError, match=re.escape(
            "native_layer_norm_backward: mean and rstd must have 2 elements")):
        ptl.ops.aten.native_layer_norm_backward(x, x, [4], ptl.zeros(3), rstd, None, None,
                                                [1, 1, 1])


# ---- derivatives.def coverage ----


