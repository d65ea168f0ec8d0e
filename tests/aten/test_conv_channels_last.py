"""The channels-last float32 convolution of conv_nhwc.c (Note [Channels-last convolution]):
forward, input, weight and bias gradients of a channels-last input against NumPy float64 loops,
across the blocking thresholds (NHWC_TILE_FLOATS rows of the implicit GEMM's A per tile, at
least 8; NHWC_WGRAD_FLOATS per weight-gradient product; a sample's tiles in the input
gradient), the one-GEMM 1x1 case, the layouts of the results, the same bits on one thread and
on two, and the cases left to the NCHW kernels at the boundary (float64, groups, transposed),
which gradcheck covers in float64.

Kernels larger than 1x1 run conv_nhwc.c only on the portable engine (where the packed NCHW
kernels do not run); elsewhere they take the boundary, so the whole file runs again with
PTL_CPU_CAPABILITY=default (test_native_kernels_on_the_portable_engine)."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite.autograd import gradcheck
from helpers import assert_no_leak, rerun_with_capability

# conv_nhwc.c's NHWC_TILE_FLOATS and NHWC_WGRAD_FLOATS (test_size_thresholds.py checks them)
NHWC_TILE_FLOATS, NHWC_WGRAD_FLOATS = 16384, 1 << 20
CL = ptl.channels_last


def tile_rows(k):
    return max(NHWC_TILE_FLOATS // k, 8)


def out_size(n, k, s, p, d):
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def conv_ref(x, w, b, gy, s, p, d):
    """y, gx, gw, gb of y = conv2d(x, w, b) for the output gradient gy, by direct summation
    over the kernel's taps in float64."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = out_size(h, kh, s, p, d), out_size(wd, kw, s, p, d)
    xp = np.pad(x, [(0, 0), (0, 0), (p, p), (p, p)])
    y = np.zeros((n, o, oh, ow))
    gxp = np.zeros_like(xp)
    gw = np.zeros(w.shape)
    for ky in range(kh):
        for kx in range(kw):
            sl = (slice(None), slice(None), slice(ky * d, ky * d + s * (oh - 1) + 1, s),
                  slice(kx * d, kx * d + s * (ow - 1) + 1, s))
            y += np.einsum("nchw,oc->nohw", xp[sl], w[:, :, ky, kx])
            if gy is not None:
                gxp[sl] += np.einsum("nohw,oc->nchw", gy, w[:, :, ky, kx])
                gw[:, :, ky, kx] = np.einsum("nohw,nchw->oc", gy, xp[sl])
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    gx = gxp[:, :, p:p + h, p:p + wd]
    gb = gy.sum(axis=(0, 2, 3)) if gy is not None else None
    return y, gx, gw, gb


def run(n, ci, co, h, wd, k, s=1, p=0, d=1, bias=True, seed=0, wformat=ptl.contiguous_format):
    """Forward and backward of a channels-last float32 conv2d against the float64 reference."""
    rng = np.random.RandomState(seed)
    xa = rng.uniform(-1, 1, (n, ci, h, wd)).astype(np.float32)
    wa = rng.uniform(-1, 1, (co, ci, k, k)).astype(np.float32)
    ba = rng.uniform(-1, 1, co).astype(np.float32) if bias else None
    x = ptl.tensor(xa).to(memory_format=CL).requires_grad_()
    w = ptl.tensor(wa).to(memory_format=wformat).requires_grad_()
    b = ptl.tensor(ba).requires_grad_() if bias else None
    y = F.conv2d(x, w, b, stride=s, padding=p, dilation=d)
    gya = rng.uniform(-1, 1, tuple(y.shape)).astype(np.float32)
    y.backward(ptl.tensor(gya).to(memory_format=CL))
    ry, rgx, rgw, rgb = conv_ref(xa.astype(np.float64), wa.astype(np.float64),
                                 None if ba is None else ba.astype(np.float64),
                                 gya.astype(np.float64), s, p, d)
    kdim = ci * k * k
    np.testing.assert_allclose(y.detach().numpy(), ry, rtol=1e-4, atol=2e-6 * kdim)
    np.testing.assert_allclose(x.grad.numpy(), rgx, rtol=1e-4, atol=2e-6 * co * k * k)
    np.testing.assert_allclose(w.grad.numpy(), rgw, rtol=1e-4, atol=2e-6 * y.numel() / co)
    if bias:
        np.testing.assert_allclose(b.grad.numpy(), rgb, rtol=1e-4, atol=2e-6 * y.numel() / co)
    assert y.is_contiguous(memory_format=CL) and x.grad.is_contiguous(memory_format=CL)
    return y, x.grad, w.grad


CASES = [
    # (n, ci, co, h, w, k, s, p, d)
    (1, 3, 5, 7, 6, 3, 1, 1, 1),
    (4, 3, 32, 9, 11, 3, 1, 1, 1),
    (2, 17, 1, 6, 6, 1, 1, 0, 1),     # 1x1: one GEMM on the input's memory
    (3, 33, 67, 5, 4, 1, 1, 0, 1),
    (2, 5, 7, 9, 9, 1, 2, 0, 1),      # strided 1x1: gathered
    (2, 4, 6, 5, 5, 1, 1, 1, 1),      # padded 1x1: gathered
    (2, 5, 7, 9, 8, 3, 2, 1, 1),
    (3, 6, 9, 10, 7, 3, 2, 0, 2),     # dilation
    (2, 7, 3, 8, 8, 5, 1, 2, 1),
    (1, 2, 4, 11, 9, 5, 2, 2, 2),
    (2, 1, 1, 3, 3, 3, 1, 1, 1),      # one channel each way
    (1, 19, 23, 2, 2, 3, 1, 1, 1),    # an image smaller than the kernel's reach
    (2, 3, 4, 1, 1, 3, 1, 1, 1),
    (1, 3, 5, 4, 4, 5, 1, 2, 1),
    (2, 3, 4, 6, 5, 3, 1, 3, 1),      # padding past the kernel's reach
]


@pytest.mark.parametrize("case", CASES)
def test_against_numpy(case):
    run(*case)


def test_no_bias_and_channels_last_weight():
    run(2, 5, 6, 7, 7, 3, 1, 1, 1, bias=False)
    run(2, 5, 6, 7, 7, 3, 2, 1, 1, wformat=CL)
    run(2, 9, 6, 5, 5, 1, 1, 0, 1, wformat=CL, bias=False)


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_forward_tiles(extra):
    """M output pixels of one tile less one, one tile, one tile and one row (K = 27)."""
    t = tile_rows(27)
    m = t + extra
    h = next(hh for hh in range(1, m + 1) if m % hh == 0 and m // hh <= 64 and hh >= m // 64)
    run(1, 3, 5, h + 2, m // h + 2, 3, seed=extra + 5)


def test_several_tiles_and_samples():
    """Tiles that cross samples (forward) and several tiles inside one sample (input
    gradient): 2 samples of 30 x 30 pixels, K = 27."""
    assert tile_rows(27) < 900
    run(2, 3, 4, 30, 30, 3, 1, 1, 1)


def test_smallest_tile():
    """K above NHWC_TILE_FLOATS / 8: tiles of 8 rows (K = 67 * 49)."""
    assert NHWC_TILE_FLOATS // (67 * 49) < 8
    run(1, 67, 3, 9, 8, 7, 1, 3, 1)


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_weight_grad_tiles(extra):
    """M at one weight-gradient product of NHWC_WGRAD_FLOATS / K rows, less one and one more
    (K = 67 * 25 gives 626 rows)."""
    t = NHWC_WGRAD_FLOATS // (67 * 25)
    m = t + extra
    h = next(hh for hh in range(20, m + 1) if m % hh == 0)
    run(1, 67, 2, h, m // h, 5, 1, 2, 1, seed=extra + 9)


def test_empty_batch():
    """A size-0 batch suggests no format (PyTorch's suggest_memory_format), so its result is
    contiguous, as PyTorch's is; the gradients are zeros."""
    x = ptl.zeros(0, 3, 5, 5).to(memory_format=CL).requires_grad_()
    w = ptl.ones(4, 3, 3, 3, requires_grad=True)
    b = ptl.ones(4, requires_grad=True)
    y = F.conv2d(x, w, b, padding=1)
    assert tuple(y.shape) == (0, 4, 5, 5) and y.stride() == (100, 25, 5, 1)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 5, 5)
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((4, 3, 3, 3)))
    np.testing.assert_array_equal(b.grad.numpy(), np.zeros(4))


def test_result_layouts():
    """The output and the input gradient are channels-last (PyTorch's strides), the weight
    gradient channels-last before AccumulateGrad gives it the weight's layout, the bias
    gradient plain."""
    x = ptl.randn(2, 3, 5, 6).to(memory_format=CL)
    w = ptl.randn(4, 3, 3, 3)
    y = F.conv2d(x, w, padding=1)
    assert y.stride() == (120, 1, 24, 4)
    gy = ptl.randn(2, 4, 5, 6).to(memory_format=CL)
    gx, gw, gb = ptl.ops.aten.convolution_backward(
        gy, x, w, [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [1, 1, 1])
    assert gx.stride() == (90, 1, 18, 3)
    assert gw.stride() == (27, 1, 9, 3)
    assert gb.shape == (4,)
    gx2, gw2, gb2 = ptl.ops.aten.convolution_backward(
        gy, x, w, [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [0, 1, 0])
    assert gx2 is None and gb2 is None
    np.testing.assert_array_equal(gw2.numpy(), gw.numpy())


def test_output_gradient_of_any_layout():
    """An output gradient that is not channels-last (an expanded one from sum()) is read."""
    x = ptl.randn(2, 3, 5, 6, dtype=ptl.float32).to(memory_format=CL).requires_grad_()
    w = ptl.randn(4, 3, 3, 3, requires_grad=True)
    F.conv2d(x, w, padding=1).sum().backward()
    _, gx, gw, _ = conv_ref(x.detach().double().numpy(), w.detach().double().numpy(), None,
                            np.ones((2, 4, 5, 6)), 1, 1, 1)
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", [(3, 5, 7, 20, 20, 3, 1, 1, 1), (2, 16, 24, 9, 9, 1, 1, 0, 1),
                                  (2, 67, 3, 9, 8, 5, 2, 2, 1)])
def test_thread_count_independent(case):
    """The same bits on one thread and on two."""
    old = ptl.get_num_threads()
    got = []
    try:
        for nt in (1, 2):
            ptl.set_num_threads(nt)
            got.append([t.detach().numpy() for t in run(*case)])
    finally:
        ptl.set_num_threads(old)
    for a, b in zip(*got):
        np.testing.assert_array_equal(a, b)


def test_same_as_contiguous_input():
    """A channels-last input and its NCHW copy give the same values (the NCHW kernels are
    tested in test_conv.py and test_conv_packed.py)."""
    x = ptl.randn(3, 13, 8, 9)
    w = ptl.randn(21, 13, 3, 3)
    b = ptl.randn(21)
    y1 = F.conv2d(x.to(memory_format=CL), w, b, stride=2, padding=1)
    y2 = F.conv2d(x, w, b, stride=2, padding=1)
    np.testing.assert_allclose(y1.numpy(), y2.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("groups,transposed,dtype", [(1, False, ptl.float64),
                                                     (3, False, ptl.float32),
                                                     (1, True, ptl.float32)])
def test_boundary_cases(groups, transposed, dtype):
    """float64, grouped and transposed convolutions of a channels-last input run the NCHW
    kernels and still give channels-last results of the right values."""
    rng = np.random.RandomState(3)
    xa = rng.uniform(-1, 1, (2, 6, 5, 5))
    wa = rng.uniform(-1, 1, (6, 6 // groups, 3, 3) if not transposed else (6, 4, 3, 3))
    x = ptl.tensor(xa, dtype=dtype).to(memory_format=CL)
    w = ptl.tensor(wa, dtype=dtype)
    if transposed:
        y = F.conv_transpose2d(x, w, padding=1)
        ref = F.conv_transpose2d(x.contiguous().double(), w.double(), padding=1)
    else:
        y = F.conv2d(x, w, padding=1, groups=groups)
        ref = F.conv2d(x.contiguous().double(), w.double(), padding=1, groups=groups)
    assert y.is_contiguous(memory_format=CL)
    np.testing.assert_allclose(y.double().numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_gradcheck_channels_last():
    """float64 goes through the boundary conversion (this file's kernels are float32 only):
    the derivative of a channels-last convolution is checked there, in float64."""
    rng = np.random.RandomState(4)
    x = ptl.tensor(rng.randn(2, 3, 5, 4)).to(memory_format=CL).requires_grad_()
    w = ptl.tensor(rng.randn(4, 3, 3, 3), requires_grad=True)
    b = ptl.tensor(rng.randn(4), requires_grad=True)
    assert gradcheck(lambda a, c, e: F.conv2d(a, c, e, stride=2, padding=1), (x, w, b))


def test_errors():
    """The argument checks are convolution's own (conv_args.c), in the native path too."""
    x = ptl.randn(1, 3, 5, 5).to(memory_format=CL)
    with pytest.raises(RuntimeError, match=r"expected input\[1, 3, 5, 5\] to have 2 channels"):
        F.conv2d(x, ptl.randn(4, 2, 3, 3))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input"):
        F.conv2d(x, ptl.randn(4, 3, 7, 7))
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 4 elements"):
        F.conv2d(x, ptl.randn(4, 3, 3, 3), ptl.randn(5))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.conv2d(x, ptl.randn(4, 3, 3, 3, dtype=ptl.float64))


def test_no_leak():
    """Forward and every gradient of the native path, and its error path, free what they
    allocate."""
    x = ptl.randn(2, 3, 6, 6).to(memory_format=CL).requires_grad_()
    w = ptl.randn(4, 3, 3, 3, requires_grad=True)
    b = ptl.randn(4, requires_grad=True)

    def step():
        x.grad = w.grad = b.grad = None
        F.conv2d(x, w, b, stride=2, padding=1).sum().backward()
        F.conv2d(x.detach(), w.detach()[:, :, :1, :1])
        with pytest.raises(RuntimeError):
            F.conv2d(x.detach(), ptl.randn(4, 2, 3, 3))

    assert_no_leak(step)


# conv_nhwc.c's few-channel forward (Note [Channels-last few-channel forward]), on AVX-512:
# FEW_MAX_CI input channels at most; output channels in blocks of FEW_MAX_NV vectors of 16,
# their lanes filled 7/8 at least; tiles of few_pix(nv) pixels of a row, the last moved back
# to the row's end, tiles of one pixel in a narrower row; tasks of FEW_TASK_ROWS output rows
# (test_size_thresholds.py checks the constants)
FEW_MAX_CI, FEW_MAX_NV, FEW_TASK_ROWS = 8, 4, 8


def few_pix(nv):
    return 16 if nv == 1 else 8 if nv <= 3 else 6


FEW_CASES = [
    # (n, ci, co, h, w, k, s, p, d)
    (4, 3, 32, 9, 11, 3, 1, 1, 1),     # nv 2: a row of 11 is a tile and one moved back
    (1, 8, 16, 5, 16, 3, 1, 1, 1),     # FEW_MAX_CI; nv 1: a row of one tile exactly
    (1, 9, 16, 5, 16, 3, 1, 1, 1),     # one input channel more: the boundary
    (2, 1, 14, 6, 15, 3, 1, 1, 1),     # 14 of 16 lanes (7/8): taken; rows narrower than a tile
    (2, 2, 13, 6, 7, 3, 1, 1, 1),      # 13 of 16 lanes: the boundary
    (1, 3, 24, 5, 9, 3, 1, 1, 1),      # 24 of 32 lanes: the boundary
    (1, 4, 48, 7, 7, 3, 1, 1, 1),      # nv 3: a row of 7, one pixel narrower than a tile
    (1, 4, 48, 7, 8, 3, 1, 1, 1),      # nv 3: a row of one tile
    (1, 4, 48, 7, 9, 3, 1, 1, 1),      # nv 3: a tile and one moved back by 7
    (2, 3, 64, 17, 13, 3, 1, 1, 1),    # nv 4: 17 rows (three tasks), rows of 13
    (1, 2, 112, 5, 5, 3, 1, 1, 1),     # two blocks of channels: nv 4, then nv 3; rows of 5
    (1, 3, 70, 4, 6, 3, 1, 1, 1),      # 70 of 80 lanes: a last block of 6 channels
    (1, 3, 80, 9, 7, 3, 1, 1, 1),      # blocks of 64 and 16
    (2, 3, 32, 16, 16, 3, 1, 1, 1),    # 16 rows: two whole tasks
    (1, 3, 32, 8, 8, 3, 1, 1, 1),      # 8 rows: one task; a row of one tile
    (1, 3, 32, 3, 7, 3, 1, 1, 1),      # a row one pixel narrower than a tile
    (1, 2, 16, 3, 17, 3, 1, 1, 1),     # nv 1: a tile and one moved back by 15
    (2, 3, 16, 19, 17, 3, 2, 1, 1),    # stride 2: 10 rows (two tasks, the last of 2)
    (1, 3, 32, 20, 21, 7, 2, 3, 1),    # a stem: 7x7 stride 2
    (2, 2, 32, 11, 12, 3, 1, 2, 2),    # dilation
    (1, 3, 16, 9, 10, 5, 3, 2, 1),     # stride 3, 5x5
    (2, 3, 32, 6, 5, 3, 1, 3, 1),      # padding past the kernel's reach
    (1, 3, 32, 2, 2, 3, 1, 1, 1),      # an image smaller than the kernel's reach
    (2, 3, 32, 5, 6, 1, 1, 0, 1),      # 1x1: the GEMM, not this kernel
    (1, 3, 32, 5, 6, 3, 1, 0, 1),      # no padding
]


def few_against_nchw(case, bias=True, wview=False):
    """The few-channel forward of one case against NumPy (with its gradients, through run()),
    and against the NCHW kernels on the contiguous copy: the same bits where they run (AVX2
    and better, kernels past 1x1), since the tiles sum each output in the packed NCHW
    kernel's order."""
    n, ci, co, h, wd, k, s, p, d = case
    y, _, _ = run(*case, bias=bias, seed=ci * 100 + co)
    rng = np.random.RandomState(ci * 100 + co)
    xa = rng.uniform(-1, 1, (n, ci, h, wd)).astype(np.float32)
    wbig = rng.uniform(-1, 1, (co, ci, k, k + 1)).astype(np.float32)
    w = ptl.tensor(wbig)[..., :k] if wview else ptl.tensor(np.ascontiguousarray(wbig[..., :k]))
    b = ptl.tensor(rng.uniform(-1, 1, 2 * co).astype(np.float32))[::2] if bias else None
    x = ptl.tensor(xa)
    got = F.conv2d(x.to(memory_format=CL), w, b, stride=s, padding=p, dilation=d)
    ref = F.conv2d(x, w, b, stride=s, padding=p, dilation=d)
    assert got.is_contiguous(memory_format=CL)
    if ptl.backends.cpu.get_cpu_capability() != "DEFAULT" and k > 1:
        np.testing.assert_array_equal(got.numpy(), ref.numpy())
    else:
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    ry = conv_ref(xa.astype(np.float64), w.numpy().astype(np.float64),
                  None if b is None else b.numpy().astype(np.float64), None, s, p, d)[0]
    np.testing.assert_allclose(got.numpy(), ry, rtol=1e-4, atol=2e-6 * ci * k * k)
    return y


@pytest.mark.parametrize("case", FEW_CASES)
def test_few_channels(case):
    few_against_nchw(case)


def test_few_channels_cases_cross_the_thresholds():
    """FEW_CASES hold each tile width at, below and above a row, and the channel counts at
    and past the thresholds."""
    def lanes_filled(co):
        return co * 8 >= -(-co // 16) * 16 * 7

    taken = [c for c in FEW_CASES if c[1] <= FEW_MAX_CI and lanes_filled(c[2]) and c[5] > 1]
    assert {1, FEW_MAX_CI} <= {c[1] for c in taken}
    assert FEW_MAX_CI + 1 in {c[1] for c in FEW_CASES}
    assert lanes_filled(14) and not lanes_filled(13) and not lanes_filled(24)
    for nv in range(1, FEW_MAX_NV + 1):
        ows = {out_size(c[4], c[5], c[6], c[7], c[8]) for c in taken
               if min(-(-c[2] // 16), FEW_MAX_NV) == nv}
        assert {few_pix(nv) - 1, few_pix(nv), few_pix(nv) + 1} <= ows, nv
    ohs = {out_size(c[3], c[5], c[6], c[7], c[8]) for c in taken}
    assert {FEW_TASK_ROWS, 2 * FEW_TASK_ROWS, 2 * FEW_TASK_ROWS + 1} <= ohs


def test_few_channels_weight_and_bias_layouts():
    """A weight that is a strided view, a bias with a stride, no bias: all read as given."""
    few_against_nchw((2, 3, 32, 7, 9, 3, 1, 1, 1), wview=True)
    few_against_nchw((2, 3, 48, 7, 9, 3, 2, 1, 1), bias=False)
    run(2, 3, 32, 7, 9, 3, 1, 1, 1, wformat=CL, bias=False)


def test_few_channels_thread_count_independent():
    """Tasks of FEW_TASK_ROWS rows shared among threads: the same bits on one thread and on
    two."""
    rng = np.random.default_rng(7)
    x = ptl.tensor(rng.standard_normal((3, 3, 19, 21)).astype(np.float32)).to(memory_format=CL)
    w = ptl.tensor(rng.standard_normal((32, 3, 3, 3)).astype(np.float32))
    b = ptl.tensor(rng.standard_normal(32).astype(np.float32))
    old = ptl.get_num_threads()
    got = []
    try:
        for nt in (1, 2):
            ptl.set_num_threads(nt)
            got.append(F.conv2d(x, w, b, padding=1).numpy())
    finally:
        ptl.set_num_threads(old)
    np.testing.assert_array_equal(got[0], got[1])


def test_few_channels_image_of_padding_only():
    """An image of zero width whose padding gives output pixels: each is the bias (the NCHW
    kernels' result), whichever path the input's format takes."""
    b = ptl.randn(16)
    for fmt in (CL, ptl.contiguous_format):
        x = ptl.zeros(2, 3, 5, 0).to(memory_format=fmt)
        y = F.conv2d(x, ptl.ones(16, 3, 3, 3), b, padding=2)
        assert tuple(y.shape) == (2, 16, 7, 2)
        np.testing.assert_array_equal(y.numpy(), np.broadcast_to(b.numpy()[:, None, None],
                                                                  (2, 16, 7, 2)))


# The AVX2 engine's few-channel tiles: vectors of 8 channels, FEW2_MAX_NV of them at a time
# (a last block of one vector where 8 or fewer channels are left), their lanes filled 7/8 at
# least; tiles of few2_pix(nv) pixels of a row, then one tile of the rest of the row
FEW2_MAX_NV = 2


def few2_pix(nv):
    return 12 if nv == 1 else 6


FEW2_CASES = [
    # (n, ci, co, h, w, k, s, p, d)
    (1, 3, 16, 5, 6, 3, 1, 1, 1),      # nv 2: a row of one tile
    (1, 3, 16, 5, 5, 3, 1, 1, 1),      # nv 2: a row of the rest alone
    (2, 3, 16, 5, 7, 3, 1, 1, 1),      # nv 2: a tile and a rest of 1
    (1, 2, 8, 5, 12, 3, 1, 1, 1),      # nv 1: a row of one tile
    (1, 2, 8, 5, 11, 3, 1, 1, 1),      # nv 1: a rest of 11 alone
    (1, 2, 8, 5, 13, 3, 1, 1, 1),      # nv 1: a tile and a rest of 1
    (2, 1, 7, 6, 15, 3, 1, 1, 1),      # 7 of 8 lanes: taken, a short last vector
    (2, 1, 6, 6, 15, 3, 1, 1, 1),      # 6 of 8 lanes: the boundary
    (1, 4, 24, 7, 9, 3, 1, 1, 1),      # blocks of nv 2 and nv 1
    (1, 3, 23, 5, 10, 3, 1, 1, 1),     # 23 of 24 lanes: nv 2, then a vector of 7
    (1, 3, 14, 5, 8, 3, 1, 1, 1),      # 14 of 16 lanes: taken
    (1, 3, 13, 5, 8, 3, 1, 1, 1),      # 13 of 16 lanes: the boundary
    (1, 3, 20, 5, 8, 3, 1, 1, 1),      # 20 of 24 lanes: the boundary
    (2, 3, 32, 18, 32, 3, 1, 1, 1),    # the first layer: rows of 32, three tasks
]


@pytest.mark.parametrize("case", FEW2_CASES)
def test_few_channels_avx2_tiles(case):
    few_against_nchw(case)


@pytest.mark.parametrize("co", [8, 16, 40])
def test_few_channels_avx2_every_rest(co):
    """Rows of 1 to 25 pixels: every rest of a row after tiles of 6 and of 12 pixels."""
    for ow in range(1, 26):
        few_against_nchw((1, 3, co, 2, ow, 3, 1, 1, 1))


def test_few_channels_avx2_cases_cross_the_thresholds():
    """FEW2_CASES hold each tile width at, below and above a row, and the channel counts at
    and past the lane threshold."""
    def lanes_filled(co):
        return co * 8 >= -(-co // 8) * 8 * 7

    assert lanes_filled(7) and not lanes_filled(6) and lanes_filled(14)
    assert not lanes_filled(13) and lanes_filled(23) and not lanes_filled(20)
    taken = [c for c in FEW2_CASES if lanes_filled(c[2]) and c[5] > 1]
    for nv in range(1, FEW2_MAX_NV + 1):
        ows = {out_size(c[4], c[5], c[6], c[7], c[8]) for c in taken
               if (c[2] - 1) % 16 >= 8 * (nv - 1) and c[2] <= 8 * nv}
        assert {few2_pix(nv) - 1, few2_pix(nv), few2_pix(nv) + 1} <= ows, nv
    assert {6, 7, 13, 14, 20, 23, 24} <= {c[2] for c in FEW2_CASES}


def test_few_channels_on_avx2():
    rerun_with_capability(__file__, "avx2", "-k", "few_channels")


def test_native_kernels_on_the_portable_engine():
    rerun_with_capability(__file__, "default", "-k", "not portable_engine and not on_avx2")


def test_which_kernels_run_here():
    """With the packed NCHW kernels (AVX2 and better) a 3x3 channels-last convolution and its
    gradients are the NCHW kernels' bits on the contiguous copy (the boundary path), in
    channels-last layout; a 1x1 one runs conv_nhwc.c's single GEMM (other bits).  On the
    portable engine both run conv_nhwc.c, whose 1x1 GEMM may match the im2col path's bits."""
    portable = ptl.backends.cpu.get_cpu_capability() == "DEFAULT"
    rng = np.random.default_rng(4)
    for k in (3, 1):
        x = ptl.tensor(rng.standard_normal((2, 16, 9, 9)).astype(np.float32))
        w = ptl.tensor(rng.standard_normal((24, 16, k, k)).astype(np.float32))
        gy = ptl.tensor(rng.standard_normal((2, 24, 9, 9)).astype(np.float32))
        out = []
        for xx in (x.to(memory_format=CL), x):
            y = F.conv2d(xx, w, padding=k // 2)
            gx, gw, _ = ptl.ops.aten.convolution_backward(
                gy, xx, w, None, [1, 1], [k // 2] * 2, [1, 1], False, [0, 0], 1, [1, 1, 0])
            out.append((y, gx, gw))
        assert out[0][0].is_contiguous(memory_format=CL)
        assert out[0][1].is_contiguous(memory_format=CL)
        same = all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(*out))
        assert portable or same == (k == 3), k
        for a, b in zip(*out):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)
