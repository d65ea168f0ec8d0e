"""The float32 weight gradient by row pairs (conv_packed_wgrad.c, Note [Weight gradient by row
pairs]): stride-2 2-D convolutions into outputs 8 wide (images at most 16 wide), or 16 wide
under kernels 3 wide (images at most 32 wide), on AVX-512, against a NumPy float64 reference,
on one and two threads (the same bits: every sum has one order whatever the split).

Its thresholds: the lanes' buffer (co x kdim x 16 floats) at most WP_ACC_BYTES (at it and one
output channel past it, where the tiles take the shape); tiles of WP_MO output channels by
WP_MT taps (channel and tap counts below, at and across them, clamped at the ends); sample
blocks of WP_BLOCK_BYTES of input and output gradient (one sample a block, several blocks and
a short last one); the last vector of a plane half full (an odd output height); threads from
2**18 multiply-adds (below and above); and the shapes just outside the path (an image 17 wide
into 8 outputs, 33 wide into 16, a kernel 1 wide into 16, stride 1, groups 2), which the other
kernels take."""
import os
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                   "src", "aten", "native", "conv_packed_wgrad.c")
WP_MO, WP_MT = 8, 3
WP_BLOCK_BYTES, WP_ACC_BYTES = 4096 * 1024, 512 * 1024
PARALLEL_WORK = 1 << 18


def c_define(name):
    """The value of `#define name expr` in conv_packed_wgrad.c (integers, * and parentheses;
    this module is also imported by test_conv_packed.py's child processes, whose path has no
    tests/helpers.py)."""
    with open(SRC) as f:
        m = re.search(r"^#define\s+%s\s+(.+?)\s*(?:/\*.*)?$" % name, f.read(), re.M)
    assert m and re.fullmatch(r"[\d\s()*]+", m.group(1)), name
    return eval(m.group(1))


def test_constants():
    for name in ("WP_MO", "WP_MT", "WP_BLOCK_BYTES", "WP_ACC_BYTES"):
        assert c_define(name) == globals()[name], name


def out_size(n, k, s, p, d):
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def pairs_fit(ci, h, w, co, k, stride, pad, dil, groups):
    """wgrad_pairs_fit in Python (on AVX-512)."""
    ow = out_size(w, k[1], stride[1], pad[1], dil[1])
    return (groups == 1 and stride == (2, 2) and (ow == 8 or (ow == 16 and k[1] == WP_MT)) and
            w <= 2 * ow and co * ci * k[0] * k[1] * 64 <= WP_ACC_BYTES)


def wgrad_ref(x, gy, k, stride, pad, dil, groups):
    """d(sum(gy * conv2d(x, w)))/dw in float64, any kernel, stride, padding and dilation."""
    n, ci, _, _ = x.shape
    co, oh, ow = gy.shape[1:]
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    cpg, opg = ci // groups, co // groups
    gw = np.zeros((co, cpg) + tuple(k))
    for grp in range(groups):
        gg = gy[:, grp * opg:(grp + 1) * opg]
        xg = xp[:, grp * cpg:(grp + 1) * cpg]
        for i in range(k[0]):
            for j in range(k[1]):
                y0, x0 = i * dil[0], j * dil[1]
                patch = xg[:, :, y0:y0 + stride[0] * (oh - 1) + 1:stride[0],
                           x0:x0 + stride[1] * (ow - 1) + 1:stride[1]]
                gw[grp * opg:(grp + 1) * opg, :, i, j] = np.tensordot(
                    gg, patch, axes=([0, 2, 3], [0, 2, 3]))
    return gw


def weight_grad(x, gy, wshape, stride, pad, dil, groups, layout=None):
    """convolution_backward's weight gradient alone, float32, as float64 NumPy."""
    f = lambda a: ptl.tensor(a, dtype=ptl.float32)
    xt, gt = f(x), f(gy)
    if layout == "channels_last":
        xt = xt.contiguous(memory_format=ptl.channels_last)
        gt = gt.contiguous(memory_format=ptl.channels_last)
    elif layout == "strided":
        xt = f(np.repeat(x, 2, axis=3))[..., ::2]
        gt = f(np.repeat(gy, 2, axis=1))[:, ::2]
    w = ptl.zeros(wshape, dtype=ptl.float32)
    gw = ptl.ops.aten.convolution_backward(gt, xt, w, None, list(stride), list(pad), list(dil),
                                           False, [0, 0], groups, [0, 1, 0])[1]
    return gw.double().numpy()


def check(n, ci, h, w, co, k, stride=(2, 2), pad=(0, 0), dil=(1, 1), groups=1, layout=None,
          seed=0):
    gen = np.random.default_rng(seed)
    x = gen.standard_normal((n, ci, h, w)).astype(np.float32)
    oh, ow = (out_size(s, kk, st, p, d) for s, kk, st, p, d in zip((h, w), k, stride, pad, dil))
    gy = gen.standard_normal((n, co, oh, ow)).astype(np.float32)
    ref = wgrad_ref(x.astype(np.float64), gy.astype(np.float64), k, stride, pad, dil, groups)
    wshape = (co, ci // groups) + tuple(k)
    threads = ptl.get_num_threads()
    try:
        got = []
        for nt in (1, 2):
            ptl.set_num_threads(nt)
            got.append(weight_grad(x, gy, wshape, stride, pad, dil, groups, layout))
    finally:
        ptl.set_num_threads(threads)
    scale = max(np.abs(ref).max(initial=0.0), 1.0)
    # float32 sums of n * oh * ow products of standard normals
    np.testing.assert_allclose(got[0], ref, rtol=0, atol=3e-6 * scale * np.sqrt(n * oh * ow))
    np.testing.assert_array_equal(got[0], got[1], err_msg="1 vs 2 threads")


# (n, ci, h, w, co, k, stride, pad, dil, groups, taken, what it crosses)
CASES = [
    (4, 32, 16, 16, 64, (1, 1), (2, 2), (0, 0), (1, 1), 1, True,
     "ResNet's 1x1 downsampling 32 -> 64 (the benchmark's, batch 4)"),
    (3, 16, 16, 16, 16, (3, 3), (2, 2), (1, 1), (1, 1), 1, True, "3x3 pad 1, 16 -> 16"),
    (2, 5, 15, 15, 7, (3, 3), (2, 2), (1, 1), (1, 1), 1, True,
     "an image 15 wide; channels and taps not whole tiles"),
    (2, 4, 16, 16, 9, (3, 3), (2, 2), (2, 2), (2, 2), 1, True, "dilation 2, padding 2"),
    (3, 5, 14, 16, 7, (1, 1), (2, 2), (0, 0), (1, 1), 1, True,
     "odd output height: the last vector half full"),
    (2, 3, 16, 16, 5, (2, 2), (2, 2), (0, 0), (1, 1), 1, True, "2x2 kernel"),
    (2, 6, 20, 16, 10, (3, 1), (2, 2), (1, 0), (1, 1), 1, True,
     "3x1 kernel, image 20 x 16: five vectors a plane"),
    (2, 4, 9, 16, 8, (1, 3), (2, 2), (0, 1), (1, 1), 1, True,
     "1x3 kernel, five output rows"),
    (2, 3, 16, 16, WP_MO, (1, 1), (2, 2), (0, 0), (1, 1), 1, True,
     "co = WP_MO, kdim = WP_MT: one tile"),
    (2, 4, 16, 16, WP_MO + 1, (1, 1), (2, 2), (0, 0), (1, 1), 1, True,
     "co = WP_MO + 1, kdim = WP_MT + 1: clamped tiles"),
    (2, 2, 16, 16, WP_MO - 1, (1, 1), (2, 2), (0, 0), (1, 1), 1, True,
     "co = WP_MO - 1, kdim = WP_MT - 1: one clamped tile"),
    (2, 128, 16, 16, 64, (1, 1), (2, 2), (0, 0), (1, 1), 1, True,
     "the lanes' buffer at WP_ACC_BYTES"),
    (2, 128, 16, 16, 65, (1, 1), (2, 2), (0, 0), (1, 1), 1, False,
     "one output channel past WP_ACC_BYTES: the tiles"),
    (16, 512, 16, 16, 16, (1, 1), (2, 2), (0, 0), (1, 1), 1, True,
     "sample blocks of 7, 7 and 2"),
    (7, 512, 16, 16, 16, (1, 1), (2, 2), (0, 0), (1, 1), 1, True,
     "one whole sample block"),
    (8, 512, 16, 16, 16, (1, 1), (2, 2), (0, 0), (1, 1), 1, True,
     "one sample block and a last of one sample"),
    (2, 4096, 16, 16, 2, (1, 1), (2, 2), (0, 0), (1, 1), 1, True,
     "a sample over WP_BLOCK_BYTES: blocks of one sample"),
    (2, 5, 31, 31, 7, (3, 3), (2, 2), (1, 1), (1, 1), 1, True,
     "outputs 16 wide, an image 31 wide"),
    (3, 4, 32, 32, 9, (3, 3), (2, 2), (2, 2), (2, 2), 1, True,
     "outputs 16 wide, dilation 2, padding 2"),
    (2, 3, 27, 27, 5, (3, 3), (2, 2), (3, 3), (1, 1), 1, True,
     "outputs 16 wide, padding 3 (columns past the image on both sides)"),
    (2, 6, 21, 32, 10, (1, 3), (2, 2), (0, 1), (1, 1), 1, True,
     "outputs 16 wide, 1x3 kernel, eleven output rows"),
    (2, 16, 32, 32, 32, (3, 3), (2, 2), (1, 1), (1, 1), 1, True,
     "ResNet's 3x3 downsampling 16 -> 32 on 32 x 32 (the benchmark's, batch 2)"),
    (2, 4, 32, 32, 8, (1, 1), (2, 2), (0, 0), (1, 1), 1, False,
     "outputs 16 wide, a 1x1 kernel: the rows path"),
    (2, 4, 33, 33, 8, (3, 3), (2, 2), (0, 0), (1, 1), 1, False,
     "an image 33 wide (outputs 16 wide): the rows path"),
    (1, 1, 16, 16, 1, (1, 1), (2, 2), (0, 0), (1, 1), 1, True,
     "one channel each: under the threads' 2**18 multiply-adds"),
    (1, 64, 16, 16, 64, (1, 1), (2, 2), (0, 0), (1, 1), 1, True,
     "2**18 multiply-adds: on the threads"),
    (1, 63, 16, 16, 65, (1, 1), (2, 2), (0, 0), (1, 1), 1, True,
     "just under 2**18 multiply-adds (63 x 65 x 64): inline"),
    (2, 4, 17, 17, 8, (3, 3), (2, 2), (0, 0), (1, 1), 1, False,
     "an image 17 wide (outputs 8 wide): the tiles"),
    (2, 4, 8, 8, 8, (1, 1), (1, 1), (0, 0), (1, 1), 1, False, "stride 1: not this path"),
    (2, 8, 16, 16, 8, (3, 3), (2, 2), (1, 1), (1, 1), 2, False, "groups 2: the tiles"),
]


def test_cases_cross_their_thresholds():
    """Each case takes the path or not as its label says, and the work threshold is crossed."""
    for n, ci, h, w, co, k, stride, pad, dil, groups, taken, what in CASES:
        assert pairs_fit(ci, h, w, co, k, stride, pad, dil, groups) == taken, what
    works = {c[-1]: c[0] * c[4] * c[1] * c[5][0] * c[5][1] * 64 for c in CASES if c[3] == 16}
    assert works["2**18 multiply-adds: on the threads"] == PARALLEL_WORK
    assert works["just under 2**18 multiply-adds (63 x 65 x 64): inline"] < PARALLEL_WORK
    assert 128 * 64 * 64 == WP_ACC_BYTES and 512 * 16 * 64 == WP_ACC_BYTES
    per = (512 * 16 * 16 + 16 * 64) * 4
    assert WP_BLOCK_BYTES // per == 7
    assert (4096 * 16 * 16 + 2 * 64) * 4 > WP_BLOCK_BYTES


@pytest.mark.parametrize("case", CASES, ids=[c[-1] for c in CASES])
def test_weight_grad_by_row_pairs(case):
    n, ci, h, w, co, k, stride, pad, dil, groups, _, _ = case
    check(n, ci, h, w, co, k, stride, pad, dil, groups, seed=n + ci + co)


@pytest.mark.parametrize("layout", ["channels_last", "strided"])
def test_weight_grad_by_row_pairs_layouts(layout):
    """Channels-last and strided inputs and output gradients (the 1x1 channels-last case runs
    conv_nhwc.c's GEMM; the 3x3 one reaches this path through a contiguous copy)."""
    check(3, 8, 16, 16, 12, (1, 1), layout=layout)
    check(3, 8, 16, 16, 12, (3, 3), pad=(1, 1), layout=layout)


def test_weight_grad_by_row_pairs_special_values():
    """Infs in the input that no tap reads (odd rows and columns of a 1x1 stride-2 kernel: in
    the loaded rows, not in the permuted lanes) leave the gradient finite; one that taps read
    reaches exactly their weights, Inf or NaN (times a zero output gradient) as in the
    reference's sums."""
    gen = np.random.default_rng(3)
    x = gen.standard_normal((2, 3, 16, 16)).astype(np.float32)
    x[:, :, 1::2, :] = np.inf
    x[:, :, :, 1::2] = -np.inf
    gy = gen.standard_normal((2, 5, 8, 8)).astype(np.float32)
    got = weight_grad(x, gy, (5, 3, 1, 1), (2, 2), (0, 0), (1, 1), 1)
    ref = wgrad_ref(x.astype(np.float64), gy.astype(np.float64), (1, 1), (2, 2), (0, 0),
                    (1, 1), 1)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-4 * np.abs(ref).max())
    x = np.zeros((1, 2, 16, 16), np.float32)
    x[0, 1, 4, 6] = np.inf
    gy = np.ones((1, 3, 8, 8), np.float32)
    gy[0, 2, 2, 3] = 0.0
    got = weight_grad(x, gy, (3, 2, 3, 3), (2, 2), (1, 1), (1, 1), 1)
    with np.errstate(invalid="ignore"):
        ref = wgrad_ref(x.astype(np.float64), gy.astype(np.float64), (3, 3), (2, 2), (1, 1),
                        (1, 1), 1)
    np.testing.assert_array_equal(got, ref)
    assert np.isinf(got[:2, 1]).any() and np.isnan(got[2, 1]).any()
    assert np.isfinite(got[:, 0]).all()


def test_gradcheck_float64_on_the_paths_geometry():
    """The same geometry in float64 (the NCHW kernels) under gradcheck."""
    gen = np.random.default_rng(7)
    x = ptl.tensor(gen.standard_normal((2, 3, 15, 15)), requires_grad=True)
    w = ptl.tensor(gen.standard_normal((4, 3, 3, 3)), requires_grad=True)
    assert gradcheck(lambda a, b: ptl.nn.functional.conv2d(a, b, stride=2, padding=1), (x, w))
