"""native_group_norm / native_group_norm_backward (src/aten/native/group_norm.c) against a
NumPy float64 reference on every float dtype and layout, ranks 2 to 5, size 0, one group and
one channel a group, on 1 and 2 threads; their derivative and double-backward rows (gradcheck,
gradgradcheck), nn.GroupNorm's node, PyTorch's answers, and the errors."""
import os
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


def gn_ref(x, group, w=None, b=None, eps=1e-5):
    """NumPy float64 group norm: (out, mean [N, group], rstd [N, group])."""
    x, w, b = (None if a is None else np.asarray(a, np.float64) for a in (x, w, b))
    n, c = x.shape[:2]
    xg = x.reshape(n, group, c // group * _hw(x.shape))
    mean = xg.mean(axis=2, keepdims=True)
    rstd = 1.0 / np.sqrt(((xg - mean) ** 2).mean(axis=2, keepdims=True) + eps)
    out = ((xg - mean) * rstd).reshape(n, c, _hw(x.shape))
    if w is not None:
        out = out * w[:, None]
    if b is not None:
        out = out + b[:, None]
    return out.reshape(x.shape), mean.reshape(n, group), rstd.reshape(n, group)


def gn_backward_ref(g, x, group, w=None, eps=1e-5):
    """float64 gradients of sum(g * group_norm(x)) for input, weight and bias."""
    g, x, w = (None if a is None else np.asarray(a, np.float64) for a in (g, x, w))
    n, c = x.shape[:2]
    _, mean, rstd = gn_ref(x, group, eps=eps)
    mean, rstd = mean[..., None, None], rstd[..., None, None]
    x4 = x.reshape(n, group, c // group, _hw(x.shape))
    g4 = g.reshape(x4.shape)
    xhat = (x4 - mean) * rstd
    gw = g4 * (w.reshape(1, group, -1, 1) if w is not None else 1.0)
    s = xhat[0, 0].size if n > 0 else 1
    gx = rstd * (gw - gw.sum(axis=(2, 3), keepdims=True) / s
                 - xhat * (gw * xhat).sum(axis=(2, 3), keepdims=True) / s)
    return (gx.reshape(x.shape), (g4 * xhat).sum(axis=(0, 3)).reshape(c),
            g4.sum(axis=(0, 3)).reshape(c))


def _hw(shape):
    return int(np.prod(shape[2:])) if len(shape) > 2 else 1


# (shape, groups): ranks 2 to 5, size-0 batch, HxW 1, one group, one channel a group, group
# lengths around the eight partial sums
GN_SHAPES = [((4, 6), 3), ((3, 4, 5), 2), ((2, 6, 3, 5), 3), ((2, 4, 2, 3, 2), 4),
             ((0, 4, 3), 2), ((2, 8, 1, 1), 8), ((3, 4, 7), 1), ((2, 6, 9), 6),
             ((1, 2, 37), 2), ((2, 64, 5, 5), 8)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, group", GN_SHAPES)
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_native_group_norm(dtype, layout, shape, group, affine):
    x, xa = make(shape, dtype, layout, seed=1)
    c = shape[1]
    w, wa = make((c,), dtype, seed=2) if affine[0] else (None, None)
    b, ba = make((c,), dtype, seed=3) if affine[1] else (None, None)
    out, mean, rstd = ptl.native_group_norm(x, w, b, shape[0], c, _hw(shape), group, 1e-5)
    eo, em, er = gn_ref(xa, group, wa, ba)
    assert out.shape == x.shape and mean.shape == (shape[0], group) == rstd.shape
    assert_close(out, eo, dtype=dtype)
    assert_close(mean, em, dtype=dtype)
    assert_close(rstd, er, dtype=dtype, rtol=TOL_RSTD.get(dtype))
    assert_close(F.group_norm(x, group, w, b), eo, dtype=dtype)


TOL_RSTD = {ptl.float16: 2e-2, ptl.bfloat16: 3e-2}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, group", GN_SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_backward(threads, dtype, layout, shape, group, affine):
    x, xa = make(shape, dtype, layout, seed=4)
    g, ga = make(shape, dtype, seed=5)
    c = shape[1]
    w, wa = make((c,), dtype, seed=6) if affine else (None, None)
    b = make((c,), dtype, seed=7)[0] if affine else None
    x.requires_grad_(True)
    if affine:
        w.requires_grad_(True)
        b.requires_grad_(True)
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        F.group_norm(x, group, w, b).backward(g)
    finally:
        ptl.set_num_threads(old)
    gx, gw, gb = gn_backward_ref(ga, xa, group, wa)
    tol = 2e-4 if dtype == ptl.float32 else None
    # float32: dx is the sum of terms of size rstd |g w| (large where a group is nearly
    # constant: rstd up to 1 / sqrt(eps)), which cancel to float32's rounding of them
    scale = (np.max(np.abs(ga), initial=0) * np.max(gn_ref(xa, group)[2], initial=0) *
             (1 if wa is None else np.abs(wa).max()))
    atol = tol + 8 * 2.0 ** -24 * scale if dtype == ptl.float32 else None
    assert_close(x.grad, gx, dtype=dtype, rtol=tol, atol=atol)
    if affine:
        assert_close(w.grad, gw, dtype=dtype, rtol=tol, atol=tol)
        assert_close(b.grad, gb, dtype=dtype, rtol=tol, atol=tol)


# Big enough that ptl_parallel_for splits the groups: the same bits on 1 and 2 threads.
THREADS_SCRIPT = r"""
import sys, numpy as np, pytorchlite as ptl
ptl.set_num_threads(int(sys.argv[1]))
rng = np.random.default_rng(3)
out = []
for dt in (ptl.float32, ptl.float64):
    x = ptl.tensor(rng.standard_normal((6, 32, 40, 41)) * 2 + 3, dtype=dt)
    w = ptl.tensor(rng.standard_normal(32), dtype=dt)
    b = ptl.tensor(rng.standard_normal(32), dtype=dt)
    g = ptl.tensor(rng.standard_normal((6, 32, 40, 41)), dtype=dt)
    y, mean, rstd = ptl.ops.aten.native_group_norm(x, w, b, 6, 32, 1640, 8, 1e-5)
    grads = ptl.ops.aten.native_group_norm_backward(g, x, mean, rstd, w, 6, 32, 1640, 8,
                                                    [1, 1, 1])
    for t in (y, mean, rstd) + tuple(grads):
        out.append(t.numpy().tobytes())
sys.stdout.buffer.write(b"".join(out))
"""


def test_group_norm_same_bits_on_1_and_2_threads_and_every_vector_width():
    runs = []
    for threads, cap in (("1", "default"), ("2", "default"), ("1", "avx2"), ("2", "avx2")):
        env = dict(os.environ, PTL_CPU_CAPABILITY=cap, PYTHONPATH=ROOT)
        runs.append(subprocess.run([sys.executable, "-c", THREADS_SCRIPT, threads], env=env,
                                   check=True, capture_output=True).stdout)
    assert len(runs[0]) > 0 and all(r == runs[0] for r in runs[1:])


def test_group_norm_float32_accuracy():
    # groups with a large offset: one pass of shifted sums in double keeps the variance
    rs = np.random.RandomState(0)
    xa = (1000.0 + rs.randn(4, 6, 50)).astype(np.float32)
    ga = rs.randn(4, 6, 50).astype(np.float32)
    wa = rs.randn(6).astype(np.float32)
    x = ptl.tensor(xa).requires_grad_(True)
    w = ptl.tensor(wa).requires_grad_(True)
    out, mean, rstd = ptl.native_group_norm(x, w, None, 4, 6, 50, 3, 1e-5)
    eo, em, er = gn_ref(xa, 3, wa)
    assert_close(mean.detach(), em, rtol=1e-6, atol=0)
    assert_close(rstd.detach(), er, rtol=1e-5, atol=0)
    assert_close(out.detach(), eo, rtol=1e-5, atol=1e-5)
    out.backward(ptl.tensor(ga))
    gx, gw, _ = gn_backward_ref(ga, xa, 3, wa)
    assert_close(x.grad, gx, rtol=2e-3, atol=2e-3)
    assert_close(w.grad, gw, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16])
def test_group_norm_mixed_dtype(dtype):
    # reduced-precision input with float32 weight and bias: float32 mean and rstd
    x, xa = make((3, 6, 4), dtype, seed=11)
    w, wa = make((6,), ptl.float32, seed=12)
    b, ba = make((6,), ptl.float32, seed=13)
    out, mean, rstd = ptl.native_group_norm(x, w, b, 3, 6, 4, 2, 1e-5)
    eo, em, er = gn_ref(xa, 2, wa, ba)
    assert_close(out, eo, dtype=dtype)
    assert_close(mean, em, dtype=ptl.float32)
    assert_close(rstd, er, dtype=ptl.float32, rtol=1e-4)
    name = lambda d: str(d).split(".")[-1]
    want = golden(lambda: [name(t.dtype) for t in torch.native_group_norm(
        torch.tensor(np.asarray(xa, np.float32)).to(getattr(torch, name(dtype))),
        torch.tensor(wa), torch.tensor(ba), 3, 6, 4, 2, 1e-5)])
    assert want == [name(t.dtype) for t in (out, mean, rstd)]


def test_group_norm_module_and_node():
    m = ptl.nn.GroupNorm(2, 8)
    x = ptl.randn(3, 8, 5, requires_grad=True)
    y = m(x)
    assert type(y.grad_fn).__name__ == "NativeGroupNormBackward0"
    g = ptl.autograd.grad((y * y).sum(), x, create_graph=True)[0]
    assert type(g.grad_fn).__name__ == "NativeGroupNormBackwardBackward0"
    assert_no_leak(lambda: m(x).sum().backward())


def _gn_inputs(shape, affine, layout):
    x = make(shape, ptl.float64, layout, seed=8)[0].requires_grad_(True)
    c = shape[1]
    w = make((c,), ptl.float64, seed=9)[0].requires_grad_(True) if affine else None
    b = make((c,), ptl.float64, seed=10)[0].requires_grad_(True) if affine else None
    return x, w, b


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("shape, group", [((3, 4), 2), ((2, 4, 3), 2), ((2, 6, 2, 2), 3),
                                          ((2, 3, 2), 1), ((2, 3, 2), 3)])
@pytest.mark.parametrize("affine", [True, False])
def test_native_group_norm_gradcheck(layout, shape, group, affine):
    x, w, b = _gn_inputs(shape, affine, layout)
    inputs = (x, w, b) if affine else (x,)

    def fn(x, w=None, b=None):
        # all three outputs: the mean and rstd gradients are checked too
        return ptl.native_group_norm(x, w, b, shape[0], shape[1], _hw(shape), group, 1e-5)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


@pytest.mark.parametrize("affine", [(True, False), (False, True)])
def test_group_norm_gradcheck_weight_or_bias_alone(affine):
    x = make((2, 4, 3), ptl.float64, seed=14)[0].requires_grad_(True)
    p = make((4,), ptl.float64, seed=15)[0].requires_grad_(True)
    fn = lambda x, p: F.group_norm(x, 2, *((p, None) if affine[0] else (None, p)))
    assert gradcheck(fn, (x, p))
    assert gradgradcheck(fn, (x, p))


@pytest.mark.parametrize("mask", [(1, 1, 1), (1, 0, 0), (0, 1, 1), (0, 0, 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_native_group_norm_backward_gradcheck(mask, affine):
    # native_group_norm_backward called directly (mean and rstd recomputed from x)
    x, w, _ = _gn_inputs((2, 4, 3), affine, "transposed")
    g = ptl.randn(2, 4, 3, dtype=ptl.float64, requires_grad=True)

    def fn(g, x, *ws):
        w = ws[0] if affine else None
        xg = x.reshape(2, 2, 6)
        mean = xg.mean(2)
        xm = xg - mean.unsqueeze(2)
        r = 1 / ((xm * xm).mean(2) + 1e-5).sqrt()
        outs = ptl.ops.aten.native_group_norm_backward(g, x, mean, r, w, 2, 4, 3, 2,
                                                       list(mask))
        return tuple(o for o in outs if o is not None)
    inputs = (g, x, w) if affine else (g, x)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_group_norm_grads_like_torch():
    # ties: constant groups (var 0) and repeated values; the double backward too
    xa = np.array([[[1.0, 1.0], [1.0, 1.0], [2.0, -1.0], [0.0, 3.0]],
                   [[0.5, 2.0], [2.0, 2.0], [3.0, 3.0], [3.0, 3.0]]])
    wa = np.array([0.5, -1.0, 2.0, 1.5])
    ga = np.arange(16.0).reshape(2, 4, 2) % 5 - 2

    def results(lib):
        x = lib.tensor(xa, requires_grad=True)
        w = lib.tensor(wa, requires_grad=True)
        b = lib.zeros(4, dtype=lib.float64, requires_grad=True)
        y = lib.nn.functional.group_norm(x, 2, w, b)
        gx, = lib.autograd.grad((y * lib.tensor(ga)).sum(), x, create_graph=True)
        (gx * gx).sum().backward()
        assert b.grad is None
        return [t.detach().tolist() for t in (y, gx, x.grad, w.grad)]
    # the constant group's second derivative is 0: PyTorch's formula leaves rounding noise
    # there (up to 3e-5, terms of size rstd^3 = 3e7 cancelling), ours gives 0
    for a, e in zip(results(ptl), golden(lambda: results(torch))):
        np.testing.assert_allclose(np.array(a), np.array(e), rtol=1e-7, atol=1e-4)


def test_group_norm_float32_like_torch():
    rs = np.random.RandomState(5)
    xa = (rs.randn(2, 8, 3, 5) * 2 + 1).astype(np.float32)
    wa, ba = rs.randn(8).astype(np.float32), rs.randn(8).astype(np.float32)
    ga = rs.randn(2, 8, 3, 5).astype(np.float32)

    def results(lib):
        x = lib.tensor(xa, requires_grad=True)
        w = lib.tensor(wa, requires_grad=True)
        b = lib.tensor(ba, requires_grad=True)
        y = lib.nn.functional.group_norm(x, 4, w, b)
        y.backward(lib.tensor(ga))
        return [t.detach().tolist() for t in (y, x.grad, w.grad, b.grad)]
    for a, e in zip(results(ptl), golden(lambda: results(torch))):
        np.testing.assert_allclose(np.array(a), np.array(e), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", INT_DTYPES + [ptl.bool])
def test_group_norm_rejects_dtype(dtype):
    name = {ptl.bool: "Bool", ptl.uint8: "Byte", ptl.int8: "Char", ptl.int16: "Short",
            ptl.int32: "Int", ptl.int64: "Long"}[dtype]
    with pytest.raises(NotImplementedError,
                       match=f'"GroupNormKernelImpl" not implemented for \'{name}\''):
        ptl.native_group_norm(ptl.ones(2, 4, dtype=dtype), None, None, 2, 4, 1, 2, 1e-5)


@pytest.mark.parametrize("fn, msg", [
    (lambda m, x: m.nn.functional.group_norm(x, 3),
     "Expected number of channels in input to be divisible by num_groups, but got input of "
     "shape [2, 4, 3] and num_groups=3"),
    (lambda m, x: m.native_group_norm(x, None, None, 2, 4, 3, 3, 1e-5),
     "Expected number of channels in input to be divisible by num_groups, but got input of "
     "shape [2, 4, 3] and num_groups=3"),
    (lambda m, x: m.nn.functional.group_norm(x, 2, m.ones(3)),
     "Expected weight to be a vector of size equal to the number of channels in input, but "
     "got weight of shape [3] and input of shape [2, 4, 3]"),
    # PyTorch's bias message prints the weight's shape ([0] for none): kept
    (lambda m, x: m.nn.functional.group_norm(x, 2, None, m.ones(5)),
     "Expected bias to be a vector of size equal to the number of channels in input, but got "
     "bias of shape [0] and input of shape [2, 4, 3]"),
    (lambda m, x: m.nn.functional.group_norm(x, 2, m.ones(4), m.ones(5)),
     "Expected bias to be a vector of size equal to the number of channels in input, but got "
     "bias of shape [4] and input of shape [2, 4, 3]"),
    (lambda m, x: m.native_group_norm(x, m.ones(3), None, 2, 4, 3, 2, 1e-5),
     "Expected weight to be a vector of size equal to the number of channels in input, but "
     "got weight of shape [3] and input of shape [2, 4, 3]"),
    (lambda m, x: m.native_group_norm(x, None, None, 2, 4, 4, 2, 1e-5),
     "Expected X.numel() == N * C * HxW to be true, but got false."),
    (lambda m, x: m.nn.functional.group_norm(x[0, 0], 1),
     "Expected at least 2 dimensions for input tensor but received 1"),
    (lambda m, x: m.native_group_norm(x.double(), m.ones(4), None, 2, 4, 3, 2, 1e-5),
     "mixed dtype (CPU): all inputs must share same datatype."),
])
def test_group_norm_errors(fn, msg):
    assert_raises_like_torch(lambda m: fn(m, m.zeros(2, 4, 3)), RuntimeError, msg)


def test_group_norm_backward_errors():
    x = ptl.zeros(2, 4)
    mean, rstd = ptl.zeros(2, 2), ptl.ones(2, 2)
    with pytest.raises(RuntimeError, match="grad_out of size \\[2, 3\\] does not match input"):
        ptl.ops.aten.native_group_norm_backward(ptl.zeros(2, 3), x, mean, rstd, None, 2, 4,
                                                1, 2, [1, 1, 1])
    with pytest.raises(RuntimeError, match="mean and rstd must have 4 elements"):
        ptl.ops.aten.native_group_norm_backward(x, x, ptl.zeros(3), rstd, None, 2, 4, 1, 2,
                                                [1, 1, 1])


@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_kernel_matches_its_composite(affine):
    """native_group_norm and its backward against F._group_norm_composite (layer norm rows
    and the affine), the path of the devices without the kernel: values and gradients."""
    results = []
    for fn in (F.group_norm, F._group_norm_composite):
        x = make((3, 6, 4, 5), ptl.float64, "transposed", seed=16)[0].requires_grad_(True)
        w = make((6,), ptl.float64, seed=17)[0].requires_grad_(True) if affine else None
        b = make((6,), ptl.float64, seed=18)[0].requires_grad_(True) if affine else None
        y = fn(x, 3, w, b, 1e-5)
        y.backward(make((3, 6, 4, 5), ptl.float64, seed=19)[0])
        results.append([t.detach().numpy() for t in (y, x.grad) + ((w.grad, b.grad) if affine
                                                                    else ())])
    for a, e in zip(*results):
        np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-12)
