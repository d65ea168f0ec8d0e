"""The convolution and pooling kernels on a CUDA device (src/cuda/conv.cu, reached through
conv.c's primitives, Note [CUDA convolution] in src/cuda/conv_plan.h; src/cuda/pool.cu, Note
[CUDA pooling] in src/cuda/pool_plan.h) against the CPU kernels: forward, input, weight and
bias gradients of 1-D, 2-D and 3-D, strided, padded, dilated, grouped, depthwise and
transposed convolutions on random, strided and channels-last inputs in every float dtype,
across the tiles' edges and the weight gradient's split, the same bits run after run; max,
average, adaptive average and adaptive max pooling and their backwards (max pooling to the
CPU's bits); max_unpool2d and its backward (the CPU's bits, its error for a bad index);
grid_sample in 2-D and 3-D, every mode and padding, and its backward (src/cuda/
grid_sampler.cu, Note [CUDA grid sampler]); and small CNNs' training steps on the device
equal to the CPU's.  Each test
skips, with the reason the device is missing, on a machine without a GPU; tools/gpu_check.sh
runs them on one, with PTL_REQUIRE_GPU=1 turning a skip into a failure."""

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite import _C
from device_required import pytestmark, require_device  # noqa: F401



FLOATS = [ptl.float32, ptl.float64, ptl.float16, ptl.bfloat16]
# both sides sum in their own order (the CPU's packed kernels or GEMM, the device's k order
# with fused multiply-adds): float32 agrees to a few ulps of the terms' size
TOL = {ptl.float32: 2e-5, ptl.float64: 1e-12, ptl.float16: 2e-3, ptl.bfloat16: 1.6e-2}


def layout(t, kind):
    """t (CPU) in a layout: contiguous, a strided slice, or channels last (channels
    innermost in memory); the same values."""
    if kind == "strided":
        wide = ptl.stack([t, t], dim=-1).flatten(-2)
        return wide[..., ::2]
    if kind == "channels_last":
        return t.permute(0, *range(2, t.dim()), 1).contiguous().permute(
            0, t.dim() - 1, *range(1, t.dim() - 1))
    return t


def leaves(t, kind="contiguous"):
    """CPU and CUDA leaves holding t's values, the CUDA one in the given layout."""
    c = t.clone().requires_grad_(True)
    d = layout(t, kind).cuda().detach().requires_grad_(True)
    return c, d


def check(got, want, k):
    """The device's result against the CPU's: the tolerance grows with sqrt(k) terms."""
    assert got.device.type == "cuda" and got.dtype == want.dtype and got.shape == want.shape
    tol = TOL[want.dtype] * max(1.0, np.sqrt(k) / 4)
    np.testing.assert_allclose(got.detach().cpu().to(ptl.float64).numpy(),
                               want.detach().to(ptl.float64).numpy(), rtol=tol, atol=tol)


def run_both(rng, dtype, fn, xshape, wshape, bias, kind="contiguous", nbias=None):
    """fn(x, w, b) and its gradients on the device against the CPU; nbias: the bias' size
    (the weight's first dim unless given)."""
    x = ptl.tensor(rng.standard_normal(xshape)).to(dtype)
    w = ptl.tensor(rng.standard_normal(wshape) / np.sqrt(np.prod(wshape[1:]))).to(dtype)
    b = ptl.tensor(rng.standard_normal(nbias or wshape[0])).to(dtype)
    (xc, xd), (wc, wd) = leaves(x, kind), leaves(w)
    bc, bd = leaves(b) if bias else (None, None)
    yc, yd = fn(xc, wc, bc), fn(xd, wd, bd)
    k = int(np.prod(wshape[1:]))
    check(yd, yc, k)
    g = ptl.tensor(rng.standard_normal(tuple(yc.shape))).to(dtype)
    yc.backward(g)
    yd.backward(g.cuda())
    check(xd.grad, xc.grad, k)
    check(wd.grad, wc.grad, g[:, :1].numel())
    if bias:
        check(bd.grad, bc.grad, g[:, :1].numel())


CASES = [
    ((4, 3, 17, 19), (8, 3, 3, 3), dict(padding=1)),
    ((2, 16, 20, 20), (32, 16, 3, 3), dict(stride=2, padding=1)),
    ((3, 8, 15, 15), (8, 1, 3, 3), dict(padding=2, dilation=2, groups=8)),
    ((2, 6, 12, 9), (9, 2, 5, 1), dict(padding=(2, 0), groups=3)),
    ((5, 70, 9, 9), (65, 70, 1, 1), dict(stride=2)),
    ((2, 4, 33), (6, 4, 3), dict(stride=2, padding=1)),
    ((1, 3, 6, 7, 5), (4, 3, 3, 3, 3), dict(padding=1)),
    ((8, 32, 64, 64), (16, 32, 3, 3), dict(padding=1)),   # a split weight gradient
    ((0, 3, 8, 8), (4, 3, 3, 3), dict(padding=1)),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_convolution_and_its_gradients_match_the_cpu(dtype):
    rng = np.random.default_rng(0)
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}
    for xshape, wshape, kw in CASES:
        def fn(x, w, b, f=conv[len(xshape)], kw=kw):
            return f(x, w, b, **kw)
        run_both(rng, dtype, fn, xshape, wshape, bias=True)
        if xshape[0] > 0 and len(xshape) == 4:
            run_both(rng, dtype, fn, xshape, wshape, bias=False, kind="channels_last")


@pytest.mark.parametrize("kind", ["strided", "channels_last"])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_strided_and_channels_last_inputs(dtype, kind):
    rng = np.random.default_rng(1)

    def fn(x, w, b):
        return F.conv2d(x, w, b, stride=2, padding=1, groups=2)
    run_both(rng, dtype, fn, (3, 8, 14, 13), (12, 4, 3, 3), bias=True, kind=kind)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_transposed_convolution_matches_the_cpu(dtype):
    rng = np.random.default_rng(2)

    def fn(x, w, b):
        return F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2)
    run_both(rng, dtype, fn, (2, 8, 9, 7), (8, 3, 3, 3), bias=True, nbias=6)


def test_results_repeat_bit_for_bit():
    rng = np.random.default_rng(3)
    x = ptl.tensor(rng.standard_normal((8, 32, 64, 64))).to(ptl.float32).cuda()
    w = ptl.tensor(rng.standard_normal((16, 32, 3, 3))).to(ptl.float32).cuda()
    runs = []
    for _ in range(2):
        xd, wd = x.detach().requires_grad_(True), w.detach().requires_grad_(True)
        y = F.conv2d(xd, wd, padding=1)
        y.backward(ptl.ones_like(y))
        runs.append([t.cpu().numpy() for t in (y.detach(), xd.grad, wd.grad)])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def test_a_small_cnn_training_step_matches_the_cpu():
    """conv -> relu -> strided conv -> relu -> linear -> cross_entropy, forward and
    backward on the device against the CPU, float64."""
    rng = np.random.default_rng(4)

    def params():
        shapes = [(8, 3, 3, 3), (8,), (16, 8, 3, 3), (16,), (10, 16 * 8 * 8), (10,)]
        return [ptl.tensor(rng.standard_normal(s) * 0.2) for s in shapes]
    ps = params()
    x = ptl.tensor(rng.standard_normal((4, 3, 16, 16)))
    t = ptl.tensor(rng.integers(0, 10, 4))
    grads = []
    for dev in ("cpu", "cuda"):
        p = [q.to(dev).detach().requires_grad_(True) for q in ps]
        h = F.relu(F.conv2d(x.to(dev), p[0], p[1], padding=1))
        h = F.relu(F.conv2d(h, p[2], p[3], stride=2, padding=1))
        loss = F.cross_entropy(F.linear(h.flatten(1), p[4], p[5]), t.to(dev))
        loss.backward()
        grads.append([loss.detach().cpu().numpy()] + [q.grad.cpu().numpy() for q in p])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


POOLS = [
    lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
    lambda x: F.max_pool2d(x, (3, 2), (1, 2), (1, 0), dilation=(2, 1)),
    lambda x: F.avg_pool2d(x, 3, 2, 1),
    lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    lambda x: F.avg_pool2d(x, 2, 2, 1, divisor_override=3),
    lambda x: F.adaptive_avg_pool2d(x, (4, 5)),
    lambda x: F.adaptive_avg_pool2d(x, (13, 11)),
    lambda x: F.adaptive_avg_pool2d(x, 1),
    lambda x: F.max_pool3d(x.unsqueeze(2).expand(-1, -1, 3, -1, -1), 2, 1),
    lambda x: F.avg_pool3d(x.unsqueeze(2).expand(-1, -1, 3, -1, -1), 2, 1, 1),
    lambda x: F.adaptive_max_pool2d(x, (4, 5)),
    lambda x: F.adaptive_max_pool2d(x, (13, 11)),
    lambda x: F.adaptive_max_pool2d(x, 1),
]


@pytest.mark.parametrize("kind", ["contiguous", "strided", "channels_last"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_pooling_and_its_backward_match_the_cpu(dtype, kind):
    rng = np.random.default_rng(5)
    for shape in ((4, 3, 17, 19), (2, 64, 56, 56), (0, 3, 8, 8)):
        x = ptl.tensor(rng.standard_normal(shape)).to(dtype)
        for fn in POOLS:
            xc, xd = leaves(x, kind)
            yc, yd = fn(xc), fn(xd)
            check(yd, yc, 1)
            g = ptl.tensor(rng.standard_normal(tuple(yc.shape))).to(dtype)
            yc.backward(g)
            yd.backward(g.cuda())
            check(xd.grad, xc.grad, 9)


def test_max_pooling_has_the_cpu_bits_and_indices():
    rng = np.random.default_rng(6)
    x = ptl.tensor(rng.standard_normal((8, 16, 33, 31))).to(ptl.float32)
    x[0, 0, 3, 3] = float("nan")
    g = ptl.tensor(rng.standard_normal((8, 16, 17, 16))).to(ptl.float32)
    out = []
    for dev in ("cpu", "cuda"):
        xd = x.to(dev).requires_grad_(True)
        y, i = F.max_pool2d(xd, 3, 2, 1, ceil_mode=True, return_indices=True)
        y.backward(g.to(dev))
        out.append([t.detach().cpu().numpy() for t in (y, i, xd.grad)])
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_a_small_cnn_with_pooling_matches_the_cpu():
    """conv -> relu -> max_pool -> conv -> avg_pool -> adaptive_avg_pool -> linear ->
    cross_entropy, forward and backward on the device against the CPU, float64."""
    rng = np.random.default_rng(7)
    shapes = [(8, 3, 3, 3), (8,), (16, 8, 3, 3), (16,), (10, 16 * 2 * 2), (10,)]
    ps = [ptl.tensor(rng.standard_normal(s) * 0.2) for s in shapes]
    x = ptl.tensor(rng.standard_normal((4, 3, 32, 32)))
    t = ptl.tensor(rng.integers(0, 10, 4))
    grads = []
    for dev in ("cpu", "cuda"):
        p = [q.to(dev).detach().requires_grad_(True) for q in ps]
        h = F.max_pool2d(F.relu(F.conv2d(x.to(dev), p[0], p[1], padding=1)), 2)
        h = F.avg_pool2d(F.relu(F.conv2d(h, p[2], p[3], padding=1)), 3, 2, 1)
        h = F.adaptive_avg_pool2d(h, 2)
        loss = F.cross_entropy(F.linear(h.flatten(1), p[4], p[5]), t.to(dev))
        loss.backward()
        grads.append([loss.detach().cpu().numpy()] + [q.grad.cpu().numpy() for q in p])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_adaptive_max_pooling_and_max_unpool_have_the_cpu_bits():
    """adaptive_max_pool2d's values, indices and gradient, and max_unpool2d of indices with
    repeats (the last source wins) and its backward, are the CPU's bits."""
    rng = np.random.default_rng(8)
    x = ptl.tensor(rng.standard_normal((8, 16, 33, 31))).to(ptl.float32)
    x[0, 0, 3, 3] = float("nan")
    idx = ptl.tensor(rng.integers(0, 40, (8, 16, 17, 16)))
    out = []
    for dev in ("cpu", "cuda"):
        xd = x.to(dev).requires_grad_(True)
        y, i = F.adaptive_max_pool2d(xd, (17, 16), return_indices=True)
        y.backward(ptl.ones(8, 16, 17, 16, device=dev))
        s = y.detach().requires_grad_(True)
        u = ptl.ops.aten.max_unpool2d(s, idx.to(dev), [8, 9])
        u.backward(ptl.arange(float(u.numel()), device=dev).reshape(u.shape))
        out.append([t.detach().cpu().numpy() for t in (y, i, xd.grad, u, s.grad)])
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_max_unpool_raises_the_cpu_error_for_the_first_bad_index():
    x = ptl.ones(2, 3, 4, 4, device="cuda")
    idx = ptl.zeros(2, 3, 4, 4, dtype=ptl.int64)
    idx[1, 2, 3, 3], idx[1, 0, 0, 1] = 64, -3
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: -3 \(output volumes "
                                           r"are of size 8x8\)"):
        F.max_unpool2d(x, idx.cuda(), 2)



RESAMPLES = [
    ("reflect pad", lambda t: F.pad(t, (2, 3, 1, 4), mode="reflect")),
    ("replicate pad", lambda t: F.pad(t, (3, 0, 2, 5), mode="replicate")),
    ("circular pad", lambda t: F.pad(t, (1, 2, 3, 3), mode="circular")),
    ("reflect pad 1d", lambda t: F.pad(t.flatten(2), (4, 1), mode="reflect")),
    ("replicate pad 3d", lambda t: F.pad(t.unsqueeze(2), (1, 1, 2, 0, 1, 1), mode="replicate")),
    ("nearest", lambda t: F.interpolate(t, scale_factor=2, mode="nearest")),
    ("nearest sizes", lambda t: F.interpolate(t, size=(7, 40), mode="nearest")),
    ("bilinear", lambda t: F.interpolate(t, size=(33, 70), mode="bilinear")),
    ("bilinear align", lambda t: F.interpolate(t, size=(9, 5), mode="bilinear",
                                                align_corners=True)),
    ("bilinear scale", lambda t: F.interpolate(t, scale_factor=1.7, mode="bilinear")),
    ("bicubic", lambda t: F.interpolate(t, size=(40, 17), mode="bicubic")),
    ("bicubic align", lambda t: F.interpolate(t, size=(40, 17), mode="bicubic",
                                               align_corners=True)),
    ("trilinear", lambda t: F.interpolate(t.unsqueeze(2), size=(3, 20, 30), mode="trilinear")),
    ("linear", lambda t: F.interpolate(t.flatten(2), size=(500,), mode="linear")),
]


@pytest.mark.parametrize("kind", ["contiguous", "strided", "channels_last"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_pads_and_upsampling_and_their_backward_match_the_cpu(dtype, kind):
    """Every pad and upsampling mode (Note [CUDA resampling]): the forward and the gathered
    backward against the CPU's scatter, on random, strided and channels-last inputs; the
    same bits run after run."""
    rng = np.random.default_rng(9)
    x = ptl.tensor(rng.standard_normal((2, 3, 16, 21))).to(dtype)
    for name, fn in RESAMPLES:
        xc, xd = leaves(x, kind)
        yc, yd = fn(xc), fn(xd)
        check(yd, yc, 4)
        g = ptl.tensor(rng.standard_normal(tuple(yc.shape))).to(dtype)
        yc.backward(g)
        yd.backward(g.cuda())
        check(xd.grad, xc.grad, 16)
        again = xd.detach().requires_grad_(True)
        fn(again).backward(g.cuda())
        assert ptl.equal(again.grad, xd.grad), name


def test_uint8_and_integer_resampling_match_the_cpu():
    """uint8 images (rounded and clamped) and the pads of integers (raw copies): exact."""
    rng = np.random.default_rng(10)
    u8 = ptl.tensor(rng.integers(0, 256, (2, 3, 9, 11)).astype(np.uint8))
    for mode in ("nearest", "bilinear", "bicubic"):
        want = F.interpolate(u8, size=(20, 6), mode=mode)
        got = F.interpolate(u8.cuda(), size=(20, 6), mode=mode)
        assert got.dtype == ptl.uint8
        np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    i64 = ptl.tensor(rng.integers(-2 ** 62, 2 ** 62, (2, 3, 9, 11)))
    for mode in ("reflect", "replicate", "circular"):
        np.testing.assert_array_equal(F.pad(i64.cuda(), (2, 1, 3, 2), mode=mode).cpu().numpy(),
                                      F.pad(i64, (2, 1, 3, 2), mode=mode).numpy())


@pytest.mark.parametrize("kind", ["contiguous", "strided", "channels_last"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_unfold_and_fold_have_the_cpu_bits(dtype, kind):
    """im2col (a raw copy) and col2im (the taps gathered in the CPU's order) and their
    gradients: the CPU's bits, for overlapping, gapped, dilated and padded windows."""
    rng = np.random.default_rng(11)
    x = ptl.tensor(rng.standard_normal((2, 3, 17, 20))).to(dtype)
    for k, d, p, s in (((3, 3), (1, 1), (1, 1), (1, 1)), ((2, 4), (2, 1), (0, 2), (3, 2)),
                       ((1, 1), (1, 1), (0, 0), (2, 2))):
        xc, xd = leaves(x, kind)
        cc = F.unfold(xc, k, dilation=d, padding=p, stride=s)
        cd = F.unfold(xd, k, dilation=d, padding=p, stride=s)
        np.testing.assert_array_equal(cd.detach().cpu().to(ptl.float64).numpy(),
                                      cc.detach().to(ptl.float64).numpy())
        g = ptl.tensor(rng.standard_normal(tuple(cc.shape))).to(dtype)
        cc.backward(g)
        cd.backward(g.cuda())
        np.testing.assert_array_equal(xd.grad.cpu().to(ptl.float64).numpy(),
                                      xc.grad.to(ptl.float64).numpy())


@pytest.mark.parametrize("kind", ["contiguous", "strided", "channels_last"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_grid_sample_and_its_backward_match_the_cpu(dtype, kind):
    """Every interpolation and padding mode with and without align_corners, 2-D and 3-D
    (Note [CUDA grid sampler]): the forward (the CPU's per-point code) and both gradients
    (grad_input by atomic adds) against the CPU, on random, strided and channels-last
    inputs and a broadcast (expanded) grid."""
    rng = np.random.default_rng(12)
    x2 = ptl.tensor(rng.standard_normal((2, 3, 9, 11))).to(dtype)
    x3 = ptl.tensor(rng.standard_normal((2, 3, 4, 5, 6))).to(dtype)
    g2 = ptl.tensor(rng.uniform(-1.3, 1.3, (2, 7, 13, 2))).to(dtype)
    g3 = ptl.tensor(rng.uniform(-1.3, 1.3, (1, 3, 4, 5, 3))).to(dtype).expand(2, 3, 4, 5, 3)
    for x, g, modes in ((x2, g2, ("bilinear", "nearest", "bicubic")),
                        (x3, g3, ("bilinear", "nearest"))):
        for mode in modes:
            for pad in ("zeros", "border", "reflection"):
                for align in (False, True):
                    xc, xd = leaves(x, kind)
                    gc = g.clone().requires_grad_(True)
                    gd = g.cuda().detach().requires_grad_(True)
                    yc = F.grid_sample(xc, gc, mode, pad, align)
                    yd = F.grid_sample(xd, gd, mode, pad, align)
                    check(yd, yc, 16)
                    go = ptl.tensor(rng.standard_normal(tuple(yc.shape))).to(dtype)
                    yc.backward(go)
                    yd.backward(go.cuda())
                    check(xd.grad, xc.grad, 64)
                    check(gd.grad, gc.grad, 64 * x.shape[1])
