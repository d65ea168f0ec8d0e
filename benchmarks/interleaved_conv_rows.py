"""PyTorch's time / ours for every convolution row of test_bench_nn.py (conv2d forward and
forward+backward, channels-last, convolution_backward of the ResNet-style step's convolutions
(both gradients, and each alone) and of the small CNN's) and test_bench_pool.py's fractional
max pooling, the two libraries interleaved call by call in one process, fastest of --reps
each, one thread (its CPU time):

    taskset -c 1 python benchmarks/interleaved_conv_rows.py [--only SUBSTRING] [--reps N]

Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402
from _interleave import calls_main  # noqa: E402
from test_bench_nn import CHANNELS_LAST_CONVS, CNN_CONVS, RESNET_CONVS  # noqa: E402
from test_bench_nn import conv_backward_args  # noqa: E402
from test_bench_pool import CASES as POOL_CASES  # noqa: E402


def randn(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def conv2d(lib, n, cin, hw, cout, backward):
    x = lib.tensor(randn((n, cin, hw, hw))).requires_grad_(backward)
    w = lib.tensor(randn((cout, cin, 3, 3), 1)).requires_grad_(backward)
    b = lib.tensor(randn((cout,), 2)).requires_grad_(backward)
    gy = lib.tensor(randn((n, cout, hw, hw), 3))
    if not backward:
        return lambda: lib.nn.functional.conv2d(x, w, b, padding=1)

    def step():
        x.grad = w.grad = b.grad = None
        lib.nn.functional.conv2d(x, w, b, padding=1).backward(gy)
    return step


def channels_last(lib, cin, hw, cout, k, pad, backward):
    cl = lib.channels_last
    x = lib.tensor(randn((32, cin, hw, hw))).contiguous(memory_format=cl)
    w = lib.tensor(randn((cout, cin, k, k), 1)).contiguous(memory_format=cl)
    b = lib.tensor(randn((cout,), 2))
    gy = lib.tensor(randn((32, cout, hw, hw), 3)).contiguous(memory_format=cl)
    if not backward:
        return lambda: lib.nn.functional.conv2d(x, w, b, padding=pad)
    for t in (x, w, b):
        t.requires_grad_()

    def step():
        x.grad = w.grad = b.grad = None
        lib.nn.functional.conv2d(x, w, b, padding=pad).backward(gy)
    return step


def conv_backward(lib, shape, part):
    """convolution_backward of one of RESNET_CONVS: both gradients, or the `part` ("weight",
    "input") alone."""
    args = list(conv_backward_args(lib, *shape))
    if part:
        mask = [part == "input", part == "weight", False]
        args[-1] = mask if lib is not pytorchlite else [int(m) for m in mask]
    return lambda: lib.ops.aten.convolution_backward(*args)


def cnn_backward(lib, cin, hw, cout, mask):
    gy = lib.tensor(randn((64, cout, hw - 2, hw - 2), 3))
    x, w = lib.tensor(randn((64, cin, hw, hw))), lib.tensor(randn((cout, cin, 3, 3), 1))
    m = [bool(v) for v in mask] + [False] if lib is not pytorchlite else list(mask) + [0]
    return lambda: lib.ops.aten.convolution_backward(gy, x, w, None, [1, 1], [0, 0], [1, 1],
                                                     False, [0, 0], 1, m)


def pool(lib, name, shape, k, out, backward):
    x = lib.tensor(randn(shape)).requires_grad_(backward)
    u = lib.tensor(np.random.default_rng(1).random((shape[0], shape[1], len(out)),
                                                   dtype=np.float32))
    f = getattr(lib.nn.functional, name)

    def run():
        y = f(x, k, out, _random_samples=u)
        if backward:
            x.grad = None
            y.sum().backward()
    return run


def rows():
    """(name, make(lib) -> call)"""
    out = []
    for n, cin, hw, cout in [(32, 3, 32, 32), (32, 32, 16, 64)]:
        for bw in (False, True):
            out.append((f"conv2d {n}x{cin}x{hw}x{hw} -> {cout} 3x3 pad 1, "
                        f"{'forward+backward' if bw else 'forward'}",
                        lambda m, a=(n, cin, hw, cout, bw): conv2d(m, *a)))
    for cin, hw, cout, k, pad in CHANNELS_LAST_CONVS:
        for bw in (False, True):
            out.append((f"channels_last 32x{cin}x{hw}x{hw} -> {cout} {k}x{k} pad {pad}, "
                        f"{'forward+backward' if bw else 'forward'}",
                        lambda m, a=(cin, hw, cout, k, pad, bw): channels_last(m, *a)))
    for shape in RESNET_CONVS:
        cin, hw, cout, k, stride = shape
        for part in ("", "weight", "input"):
            out.append((f"conv_backward 32x{cin}x{hw}x{hw} -> {cout} {k}x{k} s{stride}"
                        f"{', ' + part if part else ''}",
                        lambda m, s=shape, p=part: conv_backward(m, s, p)))
    for cin, hw, cout, mask in CNN_CONVS:
        out.append((f"conv_backward 64x{cin}x{hw}x{hw} -> {cout} 3x3 mask {mask}",
                    lambda m, a=(cin, hw, cout, mask): cnn_backward(m, *a)))
    for name, shape, k, o in POOL_CASES:
        if k is None:
            continue
        for bw in (False, True):
            out.append((f"{name} {'x'.join(map(str, shape))} k {k} -> {o}, "
                        f"{'forward+backward' if bw else 'forward'}",
                        lambda m, a=(name, shape, k, o, bw): pool(m, *a)))
    return out


def main(argv=None):
    calls_main(__doc__, rows, 30, 58, argv)


if __name__ == "__main__":
    main()
