"""native_batch_norm / native_batch_norm_backward (src/aten/native/batch_norm.c) against a NumPy
float64 reference on every float dtype and layout, across the kernel's chunk, in-place and
threading thresholds on one and two threads, against PyTorch 2.13 called the same way, their
derivative and double-backward rows (gradcheck, gradgradcheck), BatchNorm's node, and the
errors."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck, gradgradcheck
from helpers import (FLOAT_DTYPES, LAYOUTS, assert_close, assert_no_leak,
                     assert_raises_like_torch, make, torch)
from opinfo import _np_batch_norm as np_batch_norm

# batch_norm.c: values of one channel per task, and the shortest run read in place
BN_CHUNK = 8192
BN_MIN_HW = 16


def bn_ref(x, w=None, b=None, rm=None, rv=None, training=True, momentum=0.1, eps=1e-5):
    """NumPy float64 batch norm (opinfo's reference): (out, save_mean, save_invstd, new
    running_mean, new running_var); eval saves nothing."""
    x = np.asarray(x, np.float64)
    out, mean, invstd = np_batch_norm(x, w, b, rm, rv, training, momentum, eps)
    if training:
        m = x.size // x.shape[1]
        var = x.var(axis=(0,) + tuple(range(2, x.ndim)))
        rm = None if rm is None else (1 - momentum) * rm + momentum * mean
        rv = None if rv is None else (1 - momentum) * rv + momentum * var * m / (m - 1)
    return out, mean, invstd, rm, rv


def bn_backward_ref(g, x, w=None, rm=None, rv=None, training=True, eps=1e-5):
    """float64 gradients of sum(g * batch_norm(x)) for input, weight and bias."""
    g, x = np.asarray(g, np.float64), np.asarray(x, np.float64)
    axes = (0,) + tuple(range(2, x.ndim))
    shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
    mean, var = (x.mean(axis=axes), x.var(axis=axes)) if training else (rm, rv)
    invstd = (1 / np.sqrt(var + eps)).reshape(shape)
    xhat = (x - mean.reshape(shape)) * invstd
    gw = g * (w.reshape(shape) if w is not None else 1.0)
    if training:
        gx = invstd * (gw - gw.mean(axis=axes, keepdims=True)
                       - xhat * (gw * xhat).mean(axis=axes, keepdims=True))
    else:
        gx = gw * invstd
    return gx, (g * xhat).sum(axis=axes), g.sum(axis=axes)


def _stats(c, dtype, seed):
    rm, rma = make((c,), dtype, seed=seed)
    rv, rva = make((c,), dtype, seed=seed + 1, low=0.5, high=2)
    return rm, rma, rv, rva


BN_SHAPES = [(4, 3), (5, 3, 4), (2, 3, 4, 5), (2, 3, 2, 2, 2), (3, 2, BN_MIN_HW - 1),
             (3, 2, BN_MIN_HW), (1, 2, BN_MIN_HW + 1), (2, 1, 3), (6, 4, 1)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", BN_SHAPES)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_native_batch_norm(dtype, layout, shape, training, affine):
    x, xa = make(shape, dtype, layout, seed=1)
    c = shape[1]
    w, wa = make((c,), dtype, seed=2) if affine[0] else (None, None)
    b, ba = make((c,), dtype, seed=3) if affine[1] else (None, None)
    rm, rma, rv, rva = _stats(c, dtype, 4)
    out, mean, invstd = ptl.native_batch_norm(x, w, b, rm, rv, training, 0.2, 1e-3)
    eo, em, ei, erm, erv = bn_ref(xa, wa, ba, rma, rva, training, 0.2, 1e-3)
    assert_close(out, eo, dtype=dtype, rtol=TOL_OUT.get(dtype), atol=out_atol(xa, ei, wa, dtype))
    assert_close(mean, em, dtype=dtype)
    assert_close(invstd, ei, dtype=dtype, rtol=TOL_OUT.get(dtype))
    assert_close(rm, erm, dtype=dtype)
    assert_close(rv, erv, dtype=dtype)
    assert out.is_contiguous()


# float16/bfloat16: the output is normalized values rounded in the narrow dtype
TOL_OUT = {ptl.float16: 2e-2, ptl.bfloat16: 5e-2}
EPS = {ptl.float16: 2.0 ** -10, ptl.bfloat16: 2.0 ** -7, ptl.float32: 2.0 ** -23,
       ptl.float64: 2.0 ** -52}


def out_atol(xa, invstd, wa, dtype):
    """The output is x a + k with a = w invstd, k = b - mean a, rounded in the work dtype
    (float for float16/bfloat16), as PyTorch's kernel: x a and mean a cancel to within a few
    roundings of |x a| (a channel of equal values, as the expanded layout's 2-D inputs, has
    invstd = 1 / sqrt(eps))."""
    work = ptl.float32 if dtype != ptl.float64 else dtype
    inv = np.abs(invstd).max() if np.size(invstd) else 1.0
    scale = np.abs(xa).max(initial=0) * inv * (np.abs(wa).max() if wa is not None else 1.0)
    return max(TOL_OUT.get(dtype, 1e-6 if dtype == ptl.float32 else 1e-12), 8 * EPS[work] * scale)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m", [BN_CHUNK - 1, BN_CHUNK, BN_CHUNK + 1, 2 * BN_CHUNK + 3])
@pytest.mark.parametrize("hw", [1, BN_MIN_HW - 1, BN_MIN_HW, 64])
def test_batch_norm_thresholds(threads, m, hw):
    # channels of m values: one chunk, exactly one, two, three (BN_CHUNK); read through a
    # [C, N, *] copy or in place (BN_MIN_HW); few channels (the tasks are chunks) and 1 or 2
    # threads (the task count crosses the parallel grain); float32 with a large offset so
    # that the shifted sums matter; the result is the same on one and on two threads
    n = -(-m // hw)
    x, xa = make((n, 2, hw), ptl.float32, seed=5)
    x, xa = x + 1000, xa.astype(np.float64) + 1000
    g, ga = make((n, 2, hw), ptl.float32, seed=6)
    w, wa = make((2,), ptl.float32, seed=7)
    before = ptl.get_num_threads()
    results = []
    try:
        for t in (threads, 1):
            ptl.set_num_threads(t)
            xr = x.clone().requires_grad_(True)
            wr = w.clone().requires_grad_(True)
            out, mean, invstd = ptl.native_batch_norm(xr, wr, None, None, None, True, 0.1,
                                                      1e-5)
            out.backward(g)
            results.append([t.detach() for t in (out, mean, invstd, xr.grad, wr.grad)])
    finally:
        ptl.set_num_threads(before)
    eo, em, ei, _, _ = bn_ref(xa, wa)
    gx, gw, _ = bn_backward_ref(ga, xa, wa)
    out, mean, invstd, dx, dw = results[0]
    assert_close(mean, em, rtol=1e-7, atol=0)
    assert_close(invstd, ei, rtol=1e-5, atol=0)
    assert_close(out, eo, rtol=1e-3, atol=2e-3)
    assert_close(dx, gx, rtol=1e-3, atol=2e-3)
    assert_close(dw, gw, rtol=1e-4, atol=1e-2)
    for a, b in zip(*results):
        assert np.array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", BN_SHAPES)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("mask", [(1, 1, 1), (1, 0, 0), (0, 1, 1), (0, 0, 1)])
def test_native_batch_norm_backward(dtype, layout, shape, training, mask):
    x, xa = make(shape, dtype, layout, seed=8)
    g, ga = make(shape, dtype, "transposed", seed=9)
    c = shape[1]
    w, wa = make((c,), dtype, seed=10)
    rm, rma, rv, rva = _stats(c, dtype, 11)
    _, mean, invstd = ptl.native_batch_norm(x, w, None, None, None, True, 0.1, 1e-5)
    got = ptl.ops.aten.native_batch_norm_backward(
        g, x, w, rm, rv, mean if training else None, invstd if training else None, training,
        1e-5, list(mask))
    want = bn_backward_ref(ga, xa, wa, rma, rva, training)
    tol = 1e-4 if dtype == ptl.float32 else None
    if layout == "expanded" and training:
        # 2-D inputs make channels of equal values: roundings scaled by 1 / sqrt(eps)
        tol = 1e-1 if dtype == ptl.float32 else 1e-9
    for k in range(3):
        if mask[k]:
            assert_close(got[k], want[k], dtype=dtype, rtol=tol, atol=tol)
        else:
            assert got[k] is None


@pytest.mark.torch_ref
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 4, 5), (3, 2, 17)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_ops_like_torch(dtype, shape, training):
    # both ops called directly, as torch.ops.aten calls PyTorch's
    rs = np.random.RandomState(12)
    c = shape[1]
    arrays = [rs.randn(*shape), rs.randn(c), rs.randn(c), rs.randn(c), rs.rand(c) + 0.5,
              rs.randn(*shape)]
    results = []
    for lib in (ptl, torch):
        x, w, b, rm, rv, g = (lib.tensor(a, dtype=getattr(lib, dtype)) for a in arrays)
        out = lib.ops.aten.native_batch_norm(x, w, b, rm, rv, training, 0.3, 1e-4)
        grads = lib.ops.aten.native_batch_norm_backward(g, x, w, rm, rv, out[1], out[2],
                                                        training, 1e-4, [True, True, True])
        results.append([t.detach() for t in list(out) + [rm, rv] + list(grads)])
    for a, e in zip(*results):
        assert tuple(a.shape) == tuple(e.shape)
        assert str(a.dtype) == str(e.dtype)
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-4 if dtype == "float32" else
                                   1e-10, atol=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.torch_ref
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_mixed_dtype_like_torch(dtype, training):
    # a reduced-precision input with float32 parameters and statistics: float32 statistics
    rs = np.random.RandomState(13)
    arrays = [rs.randn(4, 3, 5), rs.randn(3), rs.randn(3), rs.randn(3), rs.rand(3) + 0.5]
    results = []
    for lib in (ptl, torch):
        x = lib.tensor(arrays[0], dtype=getattr(lib, dtype))
        w, b, rm, rv = (lib.tensor(a, dtype=lib.float32) for a in arrays[1:])
        out = lib.ops.aten.native_batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5)
        results.append([t.float() for t in list(out) + [rm, rv]] +
                       [[str(t.dtype) for t in out]])
    assert results[0][-1] == results[1][-1]
    for a, e in zip(results[0][:-1], results[1][:-1]):
        assert tuple(a.shape) == tuple(e.shape)
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=3e-2, atol=3e-2)


def test_batch_norm_float32_accuracy():
    # channels with a large offset: sums of squares would lose the variance; ours are
    # shifted sums in double
    rs = np.random.RandomState(0)
    xa = (1e4 + rs.randn(8, 3, 300)).astype(np.float32)
    out, mean, invstd = ptl.native_batch_norm(ptl.tensor(xa), None, None, None, None, True,
                                              0.1, 1e-5)
    eo, em, ei, _, _ = bn_ref(xa.astype(np.float64))
    assert_close(mean, em, rtol=1e-7, atol=0)
    assert_close(invstd, ei, rtol=1e-6, atol=0)
    assert_close(out, eo, rtol=1e-2, atol=1e-2)


def _bn_inputs(shape, layout, affine=True):
    x = make(shape, ptl.float64, layout, seed=14)[0].requires_grad_(True)
    c = shape[1]
    w = make((c,), ptl.float64, seed=15)[0].requires_grad_(True) if affine else None
    b = make((c,), ptl.float64, seed=16)[0].requires_grad_(True) if affine else None
    return x, w, b


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4), (2, 2, 2, 3)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_native_batch_norm_gradcheck(layout, shape, training, affine):
    x, w, b = _bn_inputs(shape, layout, affine)
    c = shape[1]
    rm = ptl.linspace(-1, 1, c, dtype=ptl.float64)
    rv = ptl.linspace(0.5, 2, c, dtype=ptl.float64)
    inputs = (x, w, b) if affine else (x,)

    def fn(x, w=None, b=None):
        # all three outputs in training: the saved statistics' gradients are checked too
        out = ptl.native_batch_norm(x, w, b, rm.clone(), rv.clone(), training, 0.1, 1e-5)
        return out if training else out[0]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


@pytest.mark.parametrize("mask", [(1, 1, 1), (1, 0, 0), (0, 1, 1), (0, 0, 1)])
@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_backward_gradcheck(mask, training):
    # native_batch_norm_backward called directly; in training save_mean and save_invstd are
    # recomputed from x so that they follow it in the numerical jacobian
    x, w, _ = _bn_inputs((3, 2, 4), "transposed")
    g = ptl.randn(3, 2, 4, dtype=ptl.float64, requires_grad=True)
    rm = ptl.tensor([0.5, -1.0], dtype=ptl.float64)
    rv = ptl.tensor([0.7, 1.5], dtype=ptl.float64)

    def fn(g, x, w):
        if training:
            _, mean, invstd = ptl.native_batch_norm(x, w, None, None, None, True, 0.1, 1e-5)
        else:
            mean = invstd = None
        outs = ptl.ops.aten.native_batch_norm_backward(g, x, w, rm, rv, mean, invstd, training,
                                                       1e-5, list(mask))
        return tuple(o for o in outs if o is not None)
    assert gradcheck(fn, (g, x, w))
    assert gradgradcheck(fn, (g, x, w))


def test_batch_norm_module_node_and_running_stats():
    m = ptl.nn.BatchNorm2d(3)
    x = ptl.randn(4, 3, 5, 5, requires_grad=True)
    version = m.running_mean._version
    y = m(x)
    assert type(y.grad_fn).__name__ == "NativeBatchNormBackward0"
    g = ptl.autograd.grad((y * y).sum(), x, create_graph=True)[0]
    assert type(g.grad_fn).__name__ == "NativeBatchNormBackwardBackward0"
    # the running statistics are updated in place without a version bump (as PyTorch's
    # kernel): a second training step of the module leaves the first graph valid
    assert m.running_mean._version == version
    y2 = m(x)
    (y.sum() + y2.sum()).backward()
    m.eval()
    assert_no_leak(lambda: m(x).sum().backward())
    m.train()
    assert_no_leak(lambda: m(x).sum().backward())


def test_batch_norm_empty_input_like_torch():
    # batch_norm of a size-0 input: the input back (scaled by weight[0], shifted by bias[0]),
    # gradients reach weight and bias, the running statistics are left alone
    def results(lib):
        x = lib.zeros(0, 3, 4, requires_grad=True)
        w = lib.ones(3, requires_grad=True)
        b = lib.zeros(3, requires_grad=True)
        rm = lib.zeros(3)
        y = lib.nn.functional.batch_norm(x, rm, lib.ones(3), w, b, True)
        y.sum().backward()
        return [tuple(y.shape), rm.tolist(), w.grad.tolist(), b.grad.tolist()]
    want = [(0, 3, 4), [0.0] * 3, [0.0] * 3, [0.0] * 3]
    assert results(ptl) == want
    if torch is not None:
        assert results(torch) == want


@pytest.mark.parametrize("fn, exc, msg", [
    (lambda m, x: m.nn.functional.batch_norm(x, m.zeros(4), m.ones(3), training=True),
     RuntimeError, "running_mean should contain 3 elements not 4"),
    (lambda m, x: m.nn.functional.batch_norm(x, m.zeros(3), m.ones(2), training=True),
     RuntimeError, "running_var should contain 3 elements not 2"),
    (lambda m, x: m.nn.functional.batch_norm(x, None, None, m.ones(4), training=True),
     RuntimeError, "weight should contain 3 elements not 4"),
    (lambda m, x: m.nn.functional.batch_norm(x, None, None, None, m.ones(5), training=True),
     RuntimeError, "bias should contain 3 elements not 5"),
    (lambda m, x: m.nn.functional.batch_norm(x.long(), None, None, training=True),
     NotImplementedError, "\"batch_norm\" not implemented for 'Long'"),
    (lambda m, x: m.nn.functional.batch_norm(x, None, None, m.ones(3, dtype=m.float64),
                                             training=True),
     RuntimeError, "mixed dtype (CPU): expect parameter to have scalar type of Float"),
    (lambda m, x: m.nn.functional.batch_norm(x.double(), None, None, m.ones(3),
                                             training=True),
     RuntimeError, "mixed dtype (CPU): all inputs must share same datatype."),
    (lambda m, x: m.nn.functional.batch_norm(x.half(), m.zeros(3), m.ones(3),
                                             m.ones(3, dtype=m.bfloat16), training=True),
     RuntimeError, "mixed dtype (CPU): expect parameter to have scalar type of Float"),
    (lambda m, x: m.nn.functional.batch_norm(x[:1, :, :1], None, None, training=True),
     ValueError, "Expected more than 1 value per channel when training, got input size "),
    (lambda m, x: m.native_batch_norm(x[0, 0], None, None, None, None, True, 0.1, 1e-5),
     IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (lambda m, x: m.native_batch_norm(x[:0], None, None, None, None, True, 0.1, 1e-5),
     RuntimeError, "input tensor must have at least one element, but got input_sizes = "
                   "[0, 3, 4]"),
    (lambda m, x: m.nn.functional.batch_norm(x, m.zeros(3, requires_grad=True), m.ones(3)),
     RuntimeError, "The function 'native_batch_norm' is not differentiable with respect to "
                   "argument 'running_mean'. This input cannot have requires_grad True."),
])
def test_batch_norm_errors(fn, exc, msg):
    assert_raises_like_torch(lambda m: fn(m, m.randn(2, 3, 4)), exc, msg)


def test_batch_norm_errors_of_our_own():
    # PyTorch's native ops do not check these (they crash or read out of bounds)
    x = ptl.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        ptl.native_batch_norm(x, None, None, None, ptl.ones(3), False, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="running_mean must be 1-dimensional, got 2 dims"):
        ptl.native_batch_norm(x, None, None, ptl.zeros(3, 1), ptl.ones(3), False, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match=r"native_batch_norm_backward: grad_out of size "
                                           r"\[2, 3\] does not match input of size \[2, 3, 4\]"):
        ptl.ops.aten.native_batch_norm_backward(ptl.zeros(2, 3), x, None, None, None,
                                                ptl.zeros(3), ptl.ones(3), True, 1e-5,
                                                [1, 1, 1])
    with pytest.raises(RuntimeError, match="native_batch_norm_backward: save_mean and "
                                           "save_invstd must be 1-dimensional tensors of 3 "
                                           "elements"):
        ptl.ops.aten.native_batch_norm_backward(x, x, None, None, None, None, None, True, 1e-5,
                                                [1, 1, 1])
    with pytest.raises(RuntimeError, match="native_batch_norm_backward: running_mean and "
                                           "running_var must be 1-dimensional tensors of 3 "
                                           "elements"):
        ptl.ops.aten.native_batch_norm_backward(x, x, None, None, ptl.ones(3), None, None,
                                                False, 1e-5, [1, 1, 1])
