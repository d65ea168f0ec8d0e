"""Times convolution_backward's input gradient, weight gradient and both on the small CNN's
and the ResNet-style step's 3x3 and 1x1 stride-2 convolutions, ours next to PyTorch in the
same process: the fastest of 7 rounds of 10 calls in thread CPU time (time.thread_time leaves
out the time other processes hold the core).  docs/performance.md, "Convolution on small
images" and "The input gradient by output phases".

    OMP_NUM_THREADS=1 taskset -c 1 env PYTHONPATH=. python tools/time_conv_backward.py
"""
import time

import numpy as np
import torch

import pytorchlite as ptl

# batch, input channels, image side, output channels, kernel, stride, padding
SHAPES = [(64, 32, 13, 64, 3, 1, 0), (64, 1, 28, 32, 3, 1, 0), (32, 64, 8, 64, 3, 1, 1),
          (32, 32, 16, 64, 3, 2, 1), (32, 16, 32, 32, 3, 2, 1), (32, 16, 32, 32, 1, 2, 0),
          (32, 32, 16, 64, 1, 2, 0)]


def best_us(f, n=10, rounds=7):
    f()
    best = float("inf")
    for _ in range(rounds):
        t = time.thread_time()
        for _ in range(n):
            f()
        best = min(best, (time.thread_time() - t) / n)
    return best * 1e6


def main():
    torch.set_num_threads(1)
    ptl.set_num_threads(1)
    for n, c, h, o, k, s, p in SHAPES:
        rng = np.random.default_rng(0)
        ho = (h + 2 * p - k) // s + 1
        x = rng.standard_normal((n, c, h, h)).astype(np.float32)
        w = rng.standard_normal((o, c, k, k)).astype(np.float32)
        g = rng.standard_normal((n, o, ho, ho)).astype(np.float32)
        times = {}
        for lib in (torch, ptl):
            xt, wt, gt = lib.tensor(x), lib.tensor(w), lib.tensor(g)
            row = []
            for mask in ((1, 0), (0, 1), (1, 1)):
                if c == 1 and mask[0]:          # the first layer's input needs no gradient
                    row.append(float("nan"))
                    continue
                m = [bool(v) for v in mask] + [False] if lib is torch else list(mask) + [0]
                row.append(best_us(lambda: lib.ops.aten.convolution_backward(
                    gt, xt, wt, [o], [s, s], [p, p], [1, 1], False, [0, 0], 1, m)))
            times[lib] = row
        print((n, c, h, o, k, s, p), " | ".join(
            "%s torch %.0f ours %.0f (%.2f)" % (name, a, b, a / b)
            for name, a, b in zip(("input", "weight", "both"), times[torch], times[ptl])),
            flush=True)


if __name__ == "__main__":
    main()
