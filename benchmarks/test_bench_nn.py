"""NN op benchmarks: conv2d (forward, forward+backward, each gradient), max_pool2d (forward,
forward+backward), adaptive_avg_pool2d, softmax, log_softmax, cross_entropy,
linear_cross_entropy (reference and chunked), Sequential indexing next to PyTorch (NumPy has
no such ops), and float32 matmul next to NumPy and PyTorch."""
import numpy as np
import pytest

import pytorchlite as ptl
from _impls import lib as library, randn

# a torch row is skipped (not left out) when PyTorch is not installed
NN_IMPLS = ["pytorchlite", "torch"]
MM_IMPLS = ["pytorchlite", "numpy", "torch"]


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("n,cin,hw,cout", [(32, 3, 32, 32), (32, 32, 16, 64)])
def test_conv2d(benchmark, impl, n, cin, hw, cout):
    benchmark.group = f"conv2d {n}x{cin}x{hw}x{hw} -> {cout} ch 3x3 pad 1"
    lib = library(impl)
    x, w, b = lib.tensor(randn((n, cin, hw, hw))), lib.tensor(randn((cout, cin, 3, 3), 1)), \
        lib.tensor(randn((cout,), 2))
    out = benchmark(lib.nn.functional.conv2d, x, w, b, padding=1)
    assert tuple(out.shape) == (n, cout, hw, hw)


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("n,cin,hw,cout", [(32, 3, 32, 32), (32, 32, 16, 64)])
def test_conv2d_forward_backward(benchmark, impl, n, cin, hw, cout):
    """The training direction: forward, then the input, weight and bias gradients."""
    benchmark.group = f"conv2d {n}x{cin}x{hw}x{hw} -> {cout} ch 3x3 pad 1, forward+backward"
    lib = library(impl)
    x = lib.tensor(randn((n, cin, hw, hw))).requires_grad_()
    w = lib.tensor(randn((cout, cin, 3, 3), 1)).requires_grad_()
    b = lib.tensor(randn((cout,), 2)).requires_grad_()
    gy = lib.tensor(randn((n, cout, hw, hw), 3))

    def step():
        x.grad = w.grad = b.grad = None
        lib.nn.functional.conv2d(x, w, b, padding=1).backward(gy)
        return w.grad

    out = benchmark(step)
    assert tuple(out.shape) == (cout, cin, 3, 3)


# channels-last (NHWC) convolutions, batch 32, with their weights channels-last too (what
# model.to(memory_format=torch.channels_last) gives): PyTorch runs oneDNN's NHWC kernels,
# pytorchlite conv_nhwc.c (Note [Channels-last convolution]).  (cin, hw, cout, k, padding)
CHANNELS_LAST_CONVS = [(3, 32, 32, 3, 1), (32, 16, 64, 3, 1), (64, 16, 256, 1, 0)]


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("cin,hw,cout,k,pad", CHANNELS_LAST_CONVS)
@pytest.mark.parametrize("part", ["forward", "forward+backward"])
def test_conv2d_channels_last(benchmark, impl, cin, hw, cout, k, pad, part):
    benchmark.group = (f"conv2d channels_last 32x{cin}x{hw}x{hw} -> {cout} ch {k}x{k} pad "
                       f"{pad}, {part}")
    lib = library(impl)
    cl = lib.channels_last
    x = lib.tensor(randn((32, cin, hw, hw))).contiguous(memory_format=cl)
    w = lib.tensor(randn((cout, cin, k, k), 1)).contiguous(memory_format=cl)
    b = lib.tensor(randn((cout,), 2))
    gy = lib.tensor(randn((32, cout, hw, hw), 3)).contiguous(memory_format=cl)
    if part == "forward":
        out = benchmark(lib.nn.functional.conv2d, x, w, b, padding=pad)
        assert out.is_contiguous(memory_format=cl)
        return
    for t in (x, w, b):
        t.requires_grad_()

    def step():
        x.grad = w.grad = b.grad = None
        lib.nn.functional.conv2d(x, w, b, padding=pad).backward(gy)
        return x.grad

    out = benchmark(step)
    assert out.is_contiguous(memory_format=cl)


# the convolutions of test_bench_training.py's ResNet-style network, batch 32:
# (input channels, image side, output channels, kernel, stride)
RESNET_CONVS = [(3, 32, 16, 3, 1), (16, 32, 16, 3, 1), (16, 32, 32, 3, 2), (16, 32, 32, 1, 2),
                (32, 16, 32, 3, 1), (32, 16, 64, 3, 2), (32, 16, 64, 1, 2), (64, 8, 64, 3, 1)]


def conv_backward_args(lib, cin, hw, cout, k, stride):
    """The arguments of convolution_backward (input and weight gradients, no bias) for one
    of RESNET_CONVS."""
    pad, out = k // 2, (hw + 2 * (k // 2) - k) // stride + 1
    gy = lib.tensor(randn((32, cout, out, out), 3))
    x, w = lib.tensor(randn((32, cin, hw, hw))), lib.tensor(randn((cout, cin, k, k), 1))
    # PyTorch's output_mask is bool[3]; pytorchlite's schema takes int[3]
    mask = [True, True, False] if lib is not ptl else [1, 1, 0]
    return (gy, x, w, None, [stride] * 2, [pad] * 2, [1, 1], False, [0, 0], 1, mask)


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("cin,hw,cout,k,stride", RESNET_CONVS)
def test_convolution_backward_resnet(benchmark, impl, cin, hw, cout, k, stride):
    """The input and weight gradients alone, on each convolution of the ResNet-style step."""
    benchmark.group = (f"convolution_backward 32x{cin}x{hw}x{hw} -> {cout} ch {k}x{k} "
                       f"stride {stride}")
    lib = library(impl)
    gx, gw, _ = benchmark(lib.ops.aten.convolution_backward,
                          *conv_backward_args(lib, cin, hw, cout, k, stride))
    assert tuple(gx.shape) == (32, cin, hw, hw) and tuple(gw.shape) == (cout, cin, k, k)


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("cin,hw,cout,k,stride", RESNET_CONVS)
def test_convolution_weight_grad_resnet(benchmark, impl, cin, hw, cout, k, stride):
    """The weight gradient alone (pytorchlite: conv_packed_wgrad.c), on each convolution of
    the ResNet-style step."""
    benchmark.group = (f"convolution_backward 32x{cin}x{hw}x{hw} -> {cout} ch {k}x{k} "
                       f"stride {stride}, weight gradient")
    lib = library(impl)
    args = list(conv_backward_args(lib, cin, hw, cout, k, stride))
    args[-1] = [False, True, False] if lib is not ptl else [0, 1, 0]
    _, gw, _ = benchmark(lib.ops.aten.convolution_backward, *args)
    assert tuple(gw.shape) == (cout, cin, k, k)


# the convolutions of test_bench_training.py's small CNN, batch 64, 3x3 without padding:
# (input channels, image side, output channels, the gradients wanted: input, weight)
CNN_CONVS = [(1, 28, 32, (0, 1)), (32, 13, 64, (1, 1))]


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("cin,hw,cout,mask", CNN_CONVS)
def test_convolution_backward_cnn(benchmark, impl, cin, hw, cout, mask):
    """The gradients of the small CNN's convolutions: the first one's weight gradient alone
    (its input needs none), the second one's input and weight gradients."""
    wanted = " and ".join(n for n, m in zip(("input", "weight"), mask) if m)
    benchmark.group = (f"convolution_backward 64x{cin}x{hw}x{hw} -> {cout} ch 3x3, "
                       f"{wanted} gradient")
    lib = library(impl)
    gy = lib.tensor(randn((64, cout, hw - 2, hw - 2), 3))
    x, w = lib.tensor(randn((64, cin, hw, hw))), lib.tensor(randn((cout, cin, 3, 3), 1))
    out_mask = [bool(m) for m in mask] + [False] if lib is not ptl else list(mask) + [0]
    gx, gw, _ = benchmark(lib.ops.aten.convolution_backward, gy, x, w, None, [1, 1], [0, 0],
                          [1, 1], False, [0, 0], 1, out_mask)
    assert tuple(gw.shape) == (cout, cin, 3, 3)


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("pool", ["max_pool2d", "avg_pool2d"])
def test_pool2d(benchmark, impl, pool):
    benchmark.group = f"{pool} 2x2 32x64x32x32"
    lib = library(impl)
    x = lib.tensor(randn((32, 64, 32, 32)))
    out = benchmark(getattr(lib.nn.functional, pool), x, 2)
    assert tuple(out.shape) == (32, 64, 16, 16)


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("size", [1, 2, 7])
def test_adaptive_avg_pool2d(benchmark, impl, size):
    """whole planes (1), wide windows of 16 x 16 (2, Note [Global average pooling]) and
    overlapping windows of 5 or 6 (7, Note [Adaptive average rows])"""
    benchmark.group = f"adaptive_avg_pool2d({size}) 32x64x32x32"
    lib = library(impl)
    x = lib.tensor(randn((32, 64, 32, 32)))
    out = benchmark(lib.nn.functional.adaptive_avg_pool2d, x, size)
    assert tuple(out.shape) == (32, 64, size, size)


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("shape", [(128, 512, 7, 7), (64, 256, 8, 8), (64, 64, 4, 4)], ids=str)
@pytest.mark.parametrize("op", ["adaptive_avg_pool2d(1)", "mean((2, 3))"])
def test_global_avg_pool_small_planes(benchmark, impl, shape, op):
    """Global pooling of small planes written both ways: the pooling kernel (Note [Global
    average pooling]) and the reduction of one contiguous run per output (reduce_runs.c's
    sum_runs)"""
    benchmark.group = f"{op} {'x'.join(map(str, shape))}"
    lib = library(impl)
    x = lib.tensor(randn(shape))
    if op == "mean((2, 3))":
        benchmark(x.mean, (2, 3))
    else:
        benchmark(lib.nn.functional.adaptive_avg_pool2d, x, 1)


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("shape", [(64, 64, 32, 32), (32, 64, 32, 32), (64, 64, 16, 16)],
                         ids=str)
def test_mean_of_large_planes(benchmark, impl, shape):
    """x.mean((2, 3)) of float32 planes of 256 values or more: one run each, whose whole
    blocks of 256 add in float lanes before widening (Note [Float sums in blocks])"""
    benchmark.group = f"mean((2, 3)) {'x'.join(map(str, shape))}"
    lib = library(impl)
    x = lib.tensor(randn(shape))
    benchmark(x.mean, (2, 3))


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("shape", [(128, 512, 7, 7), (64, 256, 8, 8), (128, 64, 8, 8)], ids=str)
@pytest.mark.parametrize("op", ["adaptive_avg_pool2d(1)", "mean((2, 3))",
                                "adaptive_avg_pool2d(1) forward+backward"])
def test_global_avg_pool_channels_last(benchmark, impl, shape, op):
    """Global pooling of a channels_last input, read in its own layout: the column sums of
    each sample's H W x C matrix (Note [Channels-last global average pooling]; reduce.c's
    reduce_columns for the mean) and the backward's channels_last gradient"""
    benchmark.group = f"{op} {'x'.join(map(str, shape))} channels_last"
    lib = library(impl)
    x = lib.tensor(randn(shape)).contiguous(memory_format=lib.channels_last)
    if op == "mean((2, 3))":
        benchmark(x.mean, (2, 3))
    elif op == "adaptive_avg_pool2d(1)":
        benchmark(lib.nn.functional.adaptive_avg_pool2d, x, 1)
    else:
        x.requires_grad_()
        gy = lib.tensor(randn(shape[:2] + (1, 1), 1))
        benchmark(lambda: lib.autograd.grad(lib.nn.functional.adaptive_avg_pool2d(x, 1), x, gy))


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("shape", [(128, 64, 8, 8), (32, 512, 7, 7)], ids=str)
@pytest.mark.parametrize("part", ["forward", "forward+backward"])
def test_global_avg_pool_resnet_head(benchmark, impl, shape, part):
    """The global pooling of a ResNet head: small planes, whose row tail the sum pads
    (Note [Global average pooling])"""
    benchmark.group = f"adaptive_avg_pool2d(1) {'x'.join(map(str, shape))}, {part}"
    lib = library(impl)
    x = lib.tensor(randn(shape)).requires_grad_(part != "forward")
    gy = lib.tensor(randn(shape[:2] + (1, 1), 1))

    def step():
        y = lib.nn.functional.adaptive_avg_pool2d(x, 1)
        return y if part == "forward" else lib.autograd.grad(y, x, gy)

    benchmark(step)


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("part", ["forward+backward", "backward kernel"])
def test_max_pool2d_forward_backward(benchmark, impl, part):
    """The small CNN's first pooling: forward then backward, and the backward kernel alone
    (the gradient scattered through the indices: Note [Max pooling backward])."""
    benchmark.group = f"max_pool2d 2x2 64x32x26x26, {part}"
    lib = library(impl)
    x = lib.tensor(randn((64, 32, 26, 26))).requires_grad_()
    gy = lib.tensor(randn((64, 32, 13, 13), 1))
    if part == "backward kernel":
        _, idx = lib.ops.aten.max_pool2d_with_indices(x.detach(), [2, 2], [2, 2])
        out = benchmark(lib.ops.aten.max_pool2d_with_indices_backward, gy, x.detach(), [2, 2],
                        [2, 2], [0, 0], [1, 1], False, idx)
    else:
        def step():
            x.grad = None
            lib.nn.functional.max_pool2d(x, 2).backward(gy)
            return x.grad

        out = benchmark(step)
    assert tuple(out.shape) == (64, 32, 26, 26)


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax(benchmark, impl, op):
    benchmark.group = f"{op} 4096x1024 dim -1"
    lib = library(impl)
    x = lib.tensor(randn((4096, 1024)))
    out = benchmark(getattr(lib.nn.functional, op), x, -1)
    assert tuple(out.shape) == (4096, 1024)


@pytest.mark.parametrize("impl", NN_IMPLS)
def test_cross_entropy(benchmark, impl):
    benchmark.group = "cross_entropy 4096x1000 logits"
    lib = library(impl)
    x = lib.tensor(randn((4096, 1000)))
    y = lib.tensor(np.random.default_rng(1).integers(0, 1000, 4096))
    out = benchmark(lib.nn.functional.cross_entropy, x, y)
    assert out.dim() == 0


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("path", ["reference", "chunked"])
def test_linear_cross_entropy(benchmark, impl, path):
    """An LM head's loss, forward+backward: 256 rows of 64 features over 8192 classes; the
    chunked path (options given) never holds the [256, 8192] logits whole."""
    benchmark.group = f"linear_cross_entropy 256x64 -> 8192 classes, {path}, forward+backward"
    lib = library(impl)
    x = lib.tensor(randn((256, 64))).requires_grad_()
    w = lib.tensor(randn((8192, 64), 1) * 0.1).requires_grad_()
    t = lib.tensor(np.random.default_rng(2).integers(0, 8192, 256))
    options = lib.nn.LinearCrossEntropyOptions() if path == "chunked" else None

    def step():
        x.grad = w.grad = None
        lib.nn.functional.linear_cross_entropy(x, w, t, options=options).backward()
        return w.grad

    out = benchmark(step)
    assert tuple(out.shape) == (8192, 64)


@pytest.mark.parametrize("impl", NN_IMPLS)
def test_sequential_index(benchmark, impl):
    benchmark.group = "Sequential of 4 layers, seq[1]"
    lib = library(impl)
    seq = lib.nn.Sequential(*[lib.nn.Identity() for _ in range(4)])
    out = benchmark(seq.__getitem__, 1)
    assert out is seq[1]


@pytest.mark.parametrize("impl", MM_IMPLS)
@pytest.mark.parametrize("n", [512, 1024])
def test_matmul(benchmark, impl, n):
    benchmark.group = f"matmul {n}x{n} float32"
    a, b = randn((n, n)), randn((n, n), 1)
    if impl != "numpy":
        lib = library(impl)
        a, b = lib.tensor(a), lib.tensor(b)
    out = benchmark(lambda x, y: x @ y, a, b)
    assert tuple(out.shape) == (n, n)


def test_results_agree():
    """The timed pytorchlite calls compute what PyTorch computes."""
    torch = library("torch")
    x, w, b = randn((4, 3, 9, 9)), randn((5, 3, 3, 3), 1), randn((5,), 2)
    pairs = [
        (lambda L, *t: L.nn.functional.conv2d(*t, padding=1), (x, w, b)),
        (lambda L, t: L.nn.functional.max_pool2d(t, 2), (randn((2, 3, 8, 8)),)),
        (lambda L, t: L.nn.functional.softmax(t, -1), (randn((6, 10)),)),
        (lambda L, t: L.nn.functional.log_softmax(t, -1), (randn((6, 10)),)),
        (lambda L, t, y: L.nn.functional.cross_entropy(t, y), (randn((6, 10)), np.arange(6))),
        (lambda L, p, q: p @ q, (randn((7, 5)), randn((5, 3), 1))),
    ]
    for fn, arrays in pairs:
        ours = fn(ptl, *[ptl.tensor(a) for a in arrays]).numpy()
        ref = fn(torch, *[torch.tensor(a) for a in arrays]).numpy()
        np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-5)
    for cin, hw, cout, k, pad in CHANNELS_LAST_CONVS:
        args = randn((2, cin, hw, hw)), randn((cout, cin, k, k), 1)
        outs = [L.nn.functional.conv2d(
            *[L.tensor(a).contiguous(memory_format=L.channels_last) for a in args],
            L.tensor(randn((cout,), 2)), padding=pad).numpy() for L in (ptl, torch)]
        # 32 -> 64 takes Winograd, whose float32 error is held to 1e-4 of the sum of the
        # terms' magnitudes (tests/aten/test_conv_winograd.py), not of the result
        mag = torch.nn.functional.conv2d(*[torch.tensor(np.abs(a)) for a in args], padding=pad)
        assert np.all(np.abs(outs[0] - outs[1]) <= 1e-4 * mag.numpy() + 1e-5)
    for shape in RESNET_CONVS:
        ours = ptl.ops.aten.convolution_backward(*conv_backward_args(ptl, *shape))
        ref = torch.ops.aten.convolution_backward(*conv_backward_args(torch, *shape))
        for a, b in zip(ours[:2], ref[:2]):
            b = b.numpy()
            np.testing.assert_allclose(a.numpy(), b, rtol=0, atol=1e-4 * np.abs(b).max())


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("m,k,n,bt", [(32, 128, 512, False), (128, 784, 512, True),
                                      (1024, 128, 512, True), (128, 1024, 512, False)])
def test_mm_small_medium(benchmark, impl, m, k, n, bt):
    """The GEMM fast paths (Note [GEMM packing of B]): an LSTM step, MLP layers (B = W^T)."""
    benchmark.group = f"mm {m}x{k} @ {'(%dx%d)^T' % (n, k) if bt else '%dx%d' % (k, n)} float32"
    lib = library(impl)
    a = lib.tensor(randn((m, k)))
    b = lib.tensor(randn((n, k), 1)).t() if bt else lib.tensor(randn((k, n), 1))
    out = benchmark(lib.mm, a, b)
    assert tuple(out.shape) == (m, n)


@pytest.mark.parametrize("impl", NN_IMPLS)
def test_addmm_linear(benchmark, impl):
    """addmm with a 1-D bias read in place as the beta term (ptl_gemm_add)."""
    benchmark.group = "addmm bias + 128x784 @ (512x784)^T float32"
    lib = library(impl)
    x, w, b = lib.tensor(randn((128, 784))), lib.tensor(randn((512, 784), 1)), \
        lib.tensor(randn((512,), 2))
    out = benchmark(lib.addmm, b, x, w.t())
    assert tuple(out.shape) == (128, 512)


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("part", ["forward", "forward+backward"])
def test_interpolate_x2(benchmark, impl, mode, part):
    """Upsampling by 2 through the separable rows (Note [Separable resampling])"""
    benchmark.group = f"interpolate {mode} x2 16x32x64x64, {part}"
    lib = library(impl)
    x = lib.tensor(randn((16, 32, 64, 64))).requires_grad_(part != "forward")
    gy = lib.tensor(randn((16, 32, 128, 128), 1))

    def step():
        y = lib.nn.functional.interpolate(x, scale_factor=2, mode=mode)
        return y if part == "forward" else lib.autograd.grad(y, x, gy)

    benchmark(step)


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("part", ["forward", "forward+backward"])
def test_grid_sample(benchmark, impl, part):
    """Bilinear, zeros padding, channels-last (Note [Grid sampler channels-last])"""
    benchmark.group = f"grid_sample 4x32x64x64 at 4x64x64 points, {part}"
    lib = library(impl)
    x = lib.tensor(randn((4, 32, 64, 64))).requires_grad_(part != "forward")
    grid = lib.tensor(randn((4, 64, 64, 2), 1) * 0.5).requires_grad_(part != "forward")
    gy = lib.tensor(randn((4, 32, 64, 64), 2))

    def step():
        y = lib.nn.functional.grid_sample(x, grid, align_corners=False)
        return y if part == "forward" else lib.autograd.grad(y, (x, grid), gy)

    benchmark(step)


# (label, input shape, grid shape, grid_sample keywords, dtype)
GRID_SAMPLE_VARIANTS = [
    ("nearest", (4, 32, 64, 64), (4, 64, 64, 2), dict(mode="nearest"), np.float32),
    ("bicubic", (4, 32, 64, 64), (4, 64, 64, 2), dict(mode="bicubic"), np.float32),
    ("border", (4, 32, 64, 64), (4, 64, 64, 2), dict(padding_mode="border"), np.float32),
    ("reflection", (4, 32, 64, 64), (4, 64, 64, 2), dict(padding_mode="reflection"),
     np.float32),
    ("align_corners", (4, 32, 64, 64), (4, 64, 64, 2), dict(align_corners=True), np.float32),
    ("float64", (4, 32, 64, 64), (4, 64, 64, 2), {}, np.float64),
    ("3-d 2x16x16x32x32 at 2x16x32x32", (2, 16, 16, 32, 32), (2, 16, 32, 32, 3), {},
     np.float32),
]


@pytest.mark.parametrize("impl", NN_IMPLS)
@pytest.mark.parametrize("part", ["forward", "forward+backward"])
@pytest.mark.parametrize("label, xs, gs, kw, dtype", GRID_SAMPLE_VARIANTS,
                         ids=[v[0] for v in GRID_SAMPLE_VARIANTS])
def test_grid_sample_modes(benchmark, impl, part, label, xs, gs, kw, dtype):
    """The other modes, paddings, align_corners, float64 and 3-D (bilinear, zeros padding,
    align_corners=False unless named) at test_grid_sample's size, channels-last (Note [Grid
    sampler channels-last]); nearest's forward by runs (Note [Grid sampler nearest forward])"""
    benchmark.group = f"grid_sample {label}, {part}"
    lib = library(impl)
    kw = dict(dict(align_corners=False), **kw)
    x = lib.tensor(randn(xs).astype(dtype)).requires_grad_(part != "forward")
    grid = lib.tensor(randn(gs, 1).astype(dtype) * 0.5).requires_grad_(part != "forward")
    gy = lib.tensor(randn(xs[:2] + gs[1:-1], 2).astype(dtype))

    def step():
        y = lib.nn.functional.grid_sample(x, grid, **kw)
        return y if part == "forward" else lib.autograd.grad(y, (x, grid), gy)

    benchmark(step)
