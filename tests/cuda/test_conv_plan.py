"""The implicit-GEMM convolution kernels' plan and index arithmetic (src/cuda/conv_plan.c and
conv_plan.h, compiled by gcc here and by nvcc for conv.cu), checked on the host: with
_C._cuda_kernel_emulation on, convolutions of CPU tensors go through the CUDA path (the CPU
kernel's checks and copies, then the kernels' tiles, shared-memory steps and per-thread sums
run on the host) and must reproduce a NumPy float64 reference (an explicit sum over the
kernel's taps) forward, and for the input, weight and bias gradients, under tunings with
grids of one block (grid-stride loops over the tiles) and many, the weight gradient's sum
split over chunks of K and not, tiles cut at and across their 64 x 64 x 16 edges, every
float dtype, strided, dilated, padded, grouped and depthwise convolutions, 1-D, 2-D and 3-D,
non-contiguous and channels-last inputs and an empty batch.  Needs no device and no nvcc."""
import itertools

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from kernel_emulation import TUNINGS, emulated

FLOATS = [ptl.float64, ptl.float32, ptl.float16, ptl.bfloat16]
TOL = {ptl.float64: 1e-10, ptl.float32: 1e-5, ptl.float16: 1e-2, ptl.bfloat16: 5e-2}
CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def as_tuple(v, nd):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd


def windows(shape, w, stride, pad, dil):
    """The output's spatial shape and, per tap, the slices of the padded image it reads."""
    nd = len(shape)
    out = tuple((shape[i] + 2 * pad[i] - dil[i] * (w[i] - 1) - 1) // stride[i] + 1
                for i in range(nd))
    taps = []
    for tap in itertools.product(*(range(k) for k in w)):
        first = [tap[i] * dil[i] for i in range(nd)]
        taps.append((tap, tuple(slice(first[i], first[i] + stride[i] * (out[i] - 1) + 1,
                                      stride[i]) for i in range(nd))))
    return out, taps


def conv_ref(x, w, b, stride, pad, dil, groups, gy=None):
    """y = conv(x, w) + b in float64, and with gy the gradients (gx, gw, gb)."""
    nd = x.ndim - 2
    stride, pad, dil = (as_tuple(v, nd) for v in (stride, pad, dil))
    n, ci = x.shape[:2]
    co, cpg = w.shape[:2]
    opg = co // groups
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out, taps = windows(x.shape[2:], w.shape[2:], stride, pad, dil)
    y = np.zeros((n, co) + out)
    gxp, gw = np.zeros_like(xp), np.zeros_like(w)
    for g in range(groups):
        cs, os_ = slice(g * cpg, (g + 1) * cpg), slice(g * opg, (g + 1) * opg)
        for tap, sl in taps:
            xs = xp[(slice(None), cs) + sl]
            wt = w[(os_, slice(None)) + tap]
            y[:, os_] += np.einsum("nc...,oc->no...", xs, wt)
            if gy is not None:
                gxp[(slice(None), cs) + sl] += np.einsum("no...,oc->nc...", gy[:, os_], wt)
                gw[(os_, slice(None)) + tap] += np.einsum(
                    "nop,ncp->oc", gy[:, os_].reshape(n, opg, -1), xs.reshape(n, cpg, -1))
    if b is not None:
        y += b.reshape((1, co) + (1,) * nd)
    if gy is None:
        return y
    crop = (slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(pad, x.shape[2:]))
    return y, gxp[crop], gw, gy.sum(axis=(0,) + tuple(range(2, 2 + nd)))


def close(got, want, dtype, scale=1.0):
    got = got.detach().to(ptl.float64).numpy()
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * max(scale, 1.0))


def leaf(a, dtype, layout="contiguous"):
    """a as a leaf tensor of dtype in the given layout (non-contiguous: a strided slice;
    channels_last: channels innermost in memory), and the float64 values it holds."""
    t = ptl.tensor(a).to(dtype)
    if layout == "strided":
        t = ptl.tensor(np.repeat(a, 2, axis=-1)).to(dtype)[..., ::2]
    elif layout == "channels_last":
        t = ptl.tensor(np.moveaxis(a, 1, -1).copy()).to(dtype)
        t = t.permute(0, t.dim() - 1, *range(1, t.dim() - 1))
    t.requires_grad_(True)
    return t, t.detach().to(ptl.float64).numpy()


def check_conv(rng, dtype, xshape, wshape, bias=True, layout="contiguous", **kw):
    """The emulated convolution and its three gradients against conv_ref."""
    groups = kw.get("groups", 1)
    x, xv = leaf(rng.standard_normal(xshape), dtype, layout)
    w, wv = leaf(rng.standard_normal(wshape) / np.sqrt(np.prod(wshape[1:]) or 1), dtype)
    b, bv = leaf(rng.standard_normal(wshape[0]), dtype) if bias else (None, None)
    nd = len(xshape) - 2
    y = CONV[nd](x, w, b, stride=kw.get("stride", 1), padding=kw.get("padding", 0),
                 dilation=kw.get("dilation", 1), groups=groups)
    gyv = rng.standard_normal(tuple(y.shape))
    gy = ptl.tensor(gyv).to(dtype)
    gyv = gy.to(ptl.float64).numpy()
    want, gx, gw, gb = conv_ref(xv, wv, bv, kw.get("stride", 1), kw.get("padding", 0),
                                kw.get("dilation", 1), groups, gyv)
    k = int(np.prod(wshape[1:]))
    close(y, want, dtype, np.sqrt(k))
    y.backward(gy)
    close(x.grad, gx, dtype, np.sqrt(k))
    close(w.grad, gw, dtype, np.sqrt(gyv[:, :1].size))
    if bias:
        close(b.grad, gb, dtype, np.sqrt(gyv[:, :1].size))


# (input shape, weight shape, arguments): 1x1, 3x3, 5x1, strides, paddings, dilations,
# groups and depthwise, batch 1 and more, 1-D and 3-D
SHAPES = [
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((1, 3, 7, 6), (4, 3, 3, 3), {"padding": 1}),
    ((2, 4, 9, 8), (6, 2, 3, 3), {"stride": 2, "padding": 1, "groups": 2}),
    ((2, 4, 9, 8), (4, 1, 3, 3), {"padding": 2, "dilation": 2, "groups": 4}),
    ((3, 5, 8, 7), (3, 5, 1, 1), {"stride": 2}),
    ((2, 3, 10, 5), (2, 3, 5, 1), {"padding": (2, 0), "stride": (1, 2)}),
    ((2, 2, 9, 9), (3, 2, 3, 3), {"stride": 2, "dilation": 2, "padding": 2}),
    ((2, 3, 11), (4, 3, 3), {"stride": 2, "padding": 1}),
    ((1, 2, 5, 4, 6), (3, 2, 3, 2, 3), {"padding": 1, "stride": (1, 2, 1)}),
]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_convolution_and_its_gradients_match_numpy(tuning, dtype):
    rng = np.random.default_rng(0)
    with emulated(TUNINGS[tuning]) as ran:
        for xshape, wshape, kw in SHAPES:
            check_conv(rng, dtype, xshape, wshape, **kw)
        check_conv(rng, dtype, (2, 3, 7, 6), (4, 3, 3, 3), bias=False, padding=1)
    assert ran["conv"] > 0
    if tuning != "device":
        assert ran["conv_split"] > 0


@pytest.mark.parametrize("layout", ["strided", "channels_last"])
@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_non_contiguous_and_channels_last_inputs(tuning, layout):
    rng = np.random.default_rng(1)
    with emulated(TUNINGS[tuning]):
        check_conv(rng, ptl.float64, (2, 4, 7, 6), (6, 2, 3, 3), layout=layout, padding=1,
                   groups=2)
        check_conv(rng, ptl.float32, (2, 3, 8, 8), (5, 3, 3, 3), layout=layout, stride=2)


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_tiles_at_and_across_their_edges(tuning):
    """M (output channels) 64 and 65, J (pixels) 64 and 65, K (taps) 16 and 17, the weight
    gradient's K (batch pixels) split or not, in float32 and float64."""
    rng = np.random.default_rng(2)
    with emulated(TUNINGS[tuning]):
        for co, hw, ci in ((64, (8, 8), 16), (65, (5, 13), 17), (3, (1, 65), 1)):
            for dtype in (ptl.float64, ptl.float32):
                check_conv(rng, dtype, (1, ci) + hw, (co, ci, 1, 1))
        # K = 17 x 9 taps crossing many steps of 16
        check_conv(rng, ptl.float64, (1, 17, 5, 5), (2, 17, 3, 3), padding=1)


def test_weight_gradient_split_on_the_device_tuning():
    """A long weight-gradient sum (K = 2 x 64 x 64 = 8192 batch pixels) splits into chunks
    of min_chunk (4096) even on the device's tuning; the chunks are added in order."""
    rng = np.random.default_rng(3)
    with emulated(TUNINGS["device"]) as ran:
        check_conv(rng, ptl.float64, (2, 2, 64, 64), (2, 2, 3, 3), padding=1)
    assert ran["conv_split"] > 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_empty_batch_and_empty_channels(tuning):
    with emulated(TUNINGS[tuning]):
        x = ptl.zeros(0, 3, 5, 5, requires_grad=True)
        w = ptl.ones(4, 3, 3, 3, requires_grad=True)
        b = ptl.ones(4, requires_grad=True)
        y = F.conv2d(x, w, b, padding=1)
        assert tuple(y.shape) == (0, 4, 5, 5)
        y.sum().backward()
        assert tuple(x.grad.shape) == (0, 3, 5, 5)
        np.testing.assert_array_equal(w.grad.numpy(), np.zeros((4, 3, 3, 3)))
        np.testing.assert_array_equal(b.grad.numpy(), np.zeros(4))


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_transposed_convolution_matches_the_cpu_kernel(tuning):
    """conv_transpose runs the same primitives the other way round (its forward is the image
    kernel, its gradients the column kernel and the weight gradient with the roles swapped)."""
    rng = np.random.default_rng(4)
    for dtype in (ptl.float64, ptl.float32):
        xv = rng.standard_normal((2, 4, 5, 6))
        wv = rng.standard_normal((4, 3, 3, 3)) / 6
        bv = rng.standard_normal(6)
        gyv = rng.standard_normal((2, 6, 10, 12))
        kw = {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2, "dilation": 1}
        got = []
        for emulate in (False, True):
            x, w, b = (ptl.tensor(v).to(dtype).requires_grad_(True) for v in (xv, wv, bv))
            if emulate:
                with emulated(TUNINGS[tuning]):
                    y = F.conv_transpose2d(x, w, b, **kw)
                    y.backward(ptl.tensor(gyv).to(dtype))
            else:
                y = F.conv_transpose2d(x, w, b, **kw)
                y.backward(ptl.tensor(gyv).to(dtype))
            got.append([t.detach().to(ptl.float64).numpy() for t in (y, x.grad, w.grad, b.grad)])
        for g, want in zip(got[1], got[0]):
            np.testing.assert_allclose(g, want, rtol=TOL[dtype], atol=TOL[dtype] * 10)


def test_integer_convolution_is_exact():
    """Integer dtypes compute in float64 (as on the CPU): small values sum exactly."""
    rng = np.random.default_rng(5)
    xv = rng.integers(-5, 5, (2, 3, 6, 6))
    wv = rng.integers(-3, 3, (4, 3, 3, 3))
    with emulated(TUNINGS["small"]):
        y = F.conv2d(ptl.tensor(xv), ptl.tensor(wv), padding=1).numpy()
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, conv_ref(xv.astype(float), wv.astype(float), None, 1, 1,
                                              1, 1).astype(np.int64))


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_gradcheck_through_the_emulation(tuning):
    rng = np.random.default_rng(6)
    x = ptl.tensor(rng.standard_normal((2, 4, 5, 5))).requires_grad_(True)
    w = ptl.tensor(rng.standard_normal((4, 2, 3, 3))).requires_grad_(True)
    b = ptl.tensor(rng.standard_normal(4)).requires_grad_(True)
    with emulated(TUNINGS[tuning]):
        assert ptl.autograd.gradcheck(
            lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=1, groups=2),
            (x, w, b))
        assert ptl.autograd.gradcheck(
            lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, groups=2), (x, w))


def test_results_repeat_bit_for_bit():
    """Fixed summation order: two runs of the same (split) problem give the same bits."""
    rng = np.random.default_rng(7)
    xv = rng.standard_normal((4, 8, 12, 12)).astype(np.float32)
    wv = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    out = []
    for _ in range(2):
        x, w = ptl.tensor(xv).requires_grad_(True), ptl.tensor(wv).requires_grad_(True)
        with emulated(TUNINGS["small"]):
            y = F.conv2d(x, w, padding=1)
            y.backward(ptl.ones_like(y))
        out.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(out[0], out[1]):
        np.testing.assert_array_equal(a, b)


def unfold_numpy(x, k, d, p, s):
    """im2col in float64: (N, C, H, W) -> (N, C kh kw, L), from the windows of the padded
    image"""
    n, c = x.shape[:2]
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    out, taps = windows(x.shape[2:], k, s, p, d)
    cols = np.stack([xp[(slice(None), slice(None)) + sl] for _, sl in taps], axis=2)
    return cols.reshape(n, c * len(taps), out[0] * out[1])


# (input shape, kernel, dilation, padding, stride): 1 x 1 taps, a kernel wider than the
# stride (overlapping windows: col2im sums several taps), a stride wider than the kernel
# (gaps: pixels no tap reads), dilation, padding that holds whole windows, an empty batch
FOLD_CASES = [((2, 3, 5, 6), (1, 1), (1, 1), (0, 0), (1, 1)),
              ((1, 2, 7, 9), (3, 2), (1, 1), (1, 0), (1, 1)),
              ((2, 1, 9, 8), (2, 2), (1, 1), (0, 1), (3, 2)),
              ((1, 2, 10, 11), (3, 3), (2, 3), (2, 1), (2, 1)),
              ((1, 1, 3, 3), (2, 2), (1, 1), (3, 3), (1, 1)),
              ((0, 2, 5, 5), (2, 2), (1, 1), (0, 0), (1, 1))]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_unfold_and_fold_and_their_gradients_match_numpy(tuning, dtype):
    """unfold (im2col) and fold (col2im), each the other's gradient: forward against the
    windows of the padded image, fold against the adjoint (the windows' sums)."""
    rng = np.random.default_rng(5)
    with emulated(TUNINGS[tuning]) as ran:
        for shape, k, d, p, s in FOLD_CASES:
            x = ptl.tensor(rng.standard_normal(shape)).to(dtype)
            xs = ptl.stack([x, x], -1).flatten(-2)[..., ::2].requires_grad_(True)
            xv = x.to(ptl.float64).numpy()
            cols = F.unfold(xs, k, dilation=d, padding=p, stride=s)
            want = unfold_numpy(xv, k, d, p, s)
            np.testing.assert_array_equal(cols.detach().to(ptl.float64).numpy(), want)
            g = ptl.tensor(rng.standard_normal(tuple(cols.shape))).to(dtype)
            cols.backward(g)
            # fold is unfold's adjoint: <unfold(x), g> = <x, fold(g)> for every x
            gv = g.to(ptl.float64).numpy()
            eye = np.eye(int(np.prod(shape[1:]))).reshape((-1,) + shape[1:])
            basis = np.stack([unfold_numpy(e[None], k, d, p, s)[0] for e in eye])
            adj = np.einsum("bkl,nkl->nb", basis, gv).reshape(shape)
            tol = TOL[dtype] * 4
            np.testing.assert_allclose(xs.grad.to(ptl.float64).numpy(), adj, rtol=tol, atol=tol)
            folded = F.fold(g, shape[2:], k, dilation=d, padding=p, stride=s)
            np.testing.assert_allclose(folded.to(ptl.float64).numpy(), adj, rtol=tol, atol=tol)
    assert ran["fold"] > 0


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
def test_unfold_and_fold_have_the_cpu_bits(tuning):
    """im2col copies raw elements (bool too); col2im adds the taps in the CPU's order from
    zero, so both give the CPU kernel's bits; unbatched inputs keep their rank."""
    rng = np.random.default_rng(6)
    x = ptl.tensor(rng.standard_normal((2, 3, 9, 10))).to(ptl.float32)
    b = ptl.tensor(rng.random((3, 6, 7)) > 0.5)
    cases = [(x, (3, 2), (1, 2), (1, 1), (2, 1)), (b, (2, 3), (1, 1), (0, 1), (1, 2))]
    for t, k, d, p, s in cases:
        want = F.unfold(t, k, dilation=d, padding=p, stride=s)
        with emulated(TUNINGS[tuning]) as ran:
            got = F.unfold(t, k, dilation=d, padding=p, stride=s)
        assert ran["fold"] == 1 and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        if t.dtype == ptl.bool:
            continue
        want = F.fold(want, t.shape[-2:], k, dilation=d, padding=p, stride=s)
        with emulated(TUNINGS[tuning]):
            got = F.fold(got, t.shape[-2:], k, dilation=d, padding=p, stride=s)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    unbatched = x[0]
    with emulated(TUNINGS[tuning]):
        cols = F.unfold(unbatched, 2)
        img = F.fold(cols, (9, 10), 2)
    assert cols.shape == (12, 72) and img.shape == (3, 9, 10)
    np.testing.assert_array_equal(img.numpy(), F.fold(F.unfold(unbatched, 2), (9, 10), 2).numpy())
