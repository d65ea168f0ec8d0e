"""PyTorch's time / ours for training-mode batch norm on the shapes of test_bench_training.py's
ResNet-style step (batch 32: 16 channels of 32x32, 32 of 16x16, 64 of 8x8, NCHW contiguous):
native_batch_norm (batch statistics, running statistics update, output),
native_batch_norm_backward (input, weight and bias gradients) and the two through autograd,
the two libraries interleaved call by call in one process, fastest of --reps each:

    taskset -c 1 python benchmarks/interleaved_batch_norm_rows.py [--only SUBSTRING]
    python benchmarks/interleaved_batch_norm_rows.py --threads 2

One thread times its CPU time, two threads wall time.  Needs PyTorch (pip install
torch==2.13.0)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402
from _interleave import calls_main  # noqa: E402

# the batch norms of the ResNet-style step: (N, C, HW), five of each
RESNET_BN_SHAPES = [(32, 16, 32), (32, 32, 16), (32, 64, 8)]


def randn(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def operands(lib, n, c, hw):
    x = lib.tensor(randn((n, c, hw, hw)))
    w, b = lib.tensor(1 + 0.1 * randn((c,), 1)), lib.tensor(0.1 * randn((c,), 2))
    return x, w, b, lib.zeros(c), lib.ones(c), lib.tensor(randn((n, c, hw, hw), 3))


def forward(lib, shape):
    x, w, b, rm, rv, _ = operands(lib, *shape)
    return lambda: lib.ops.aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)


def backward(lib, shape):
    x, w, b, rm, rv, gy = operands(lib, *shape)
    _, mean, invstd = lib.ops.aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)
    mask = [True, True, True] if lib is not pytorchlite else [1, 1, 1]
    return lambda: lib.ops.aten.native_batch_norm_backward(gy, x, w, rm, rv, mean, invstd,
                                                           True, 1e-5, mask)


def module_step(lib, shape):
    x, w, b, rm, rv, gy = operands(lib, *shape)
    x.requires_grad_(True)
    w.requires_grad_(True)
    b.requires_grad_(True)

    def step():
        x.grad = w.grad = b.grad = None
        lib.nn.functional.batch_norm(x, rm, rv, w, b, True).backward(gy)
    return step


def rows():
    """(name, make(lib) -> call)"""
    out = []
    for shape in RESNET_BN_SHAPES:
        n, c, hw = shape
        for kind, make in (("forward", forward), ("backward", backward),
                           ("forward+backward", module_step)):
            out.append((f"batch_norm {n}x{c}x{hw}x{hw} train, {kind}",
                        lambda m, s=shape, f=make: f(m, s)))
    return out


def main(argv=None):
    calls_main(__doc__, rows, 50, 48, argv)


if __name__ == "__main__":
    main()
