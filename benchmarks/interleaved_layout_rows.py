"""PyTorch's time / ours for the rows whose result layout follows PyTorch's (docs/decisions.md,
"Result layouts follow PyTorch's where users can see them"): the contiguous pointwise path
they must not slow (x + y, x * y, out= of the right shape), a resized out=, nonzero
(column-major), roll of a channels-last tensor and a stepped view into a contiguous result
(`x[:, ::2] * 2`: Note [Staged strided runs]); both libraries on one thread, blocks of
calls alternating round by round, fastest block of each:

    taskset -c 1 python benchmarks/interleaved_layout_rows.py [--rounds 15] [--only "x + y"]

Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import one_thread_args, run_rows  # noqa: E402


def arr(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def rows():
    big, small = arr(10 ** 6), arr(10)
    half = arr(1024, 1024) * (arr(1024, 1024) > 0)
    cl = arr(8, 32, 32, 16)     # NHWC memory of an (8, 16, 32, 32) channels-last tensor
    return [
        ("x + y 1e6", lambda L, x, y: x + y, [big, big[::-1].copy()]),
        ("x * y 1e6", lambda L, x, y: x * y, [big, big[::-1].copy()]),
        ("x + y 10", lambda L, x, y: x + y, [small, small[::-1].copy()]),
        ("x * y 10", lambda L, x, y: x * y, [small, small[::-1].copy()]),
        ("add(x, y, out=o) 10", lambda L, x, y, o: L.add(x, y, out=o),
         [small, small[::-1].copy(), small.copy()]),
        ("add(x.t(), 1, out=empty(0)) 1024^2", lambda L, x: L.add(x.t(), 1, out=L.empty(0)),
         [half]),
        ("nonzero 1024^2 half density", lambda L, x: x.nonzero(), [half]),
        ("roll channels-last 8x16x32x32", lambda L, x: L.roll(x.permute(0, 3, 1, 2), 1, 2),
         [cl]),
        ("x[:, ::2] * 2 512x1024", lambda L, x: x[:, ::2] * 2, [arr(512, 1024)]),
        ("x[:, ::2] + x[:, 1::2] 512x1024", lambda L, x: x[:, ::2] + x[:, 1::2],
         [arr(512, 1024)]),
        ("x[:, ::2] * 2 512x1024 float64", lambda L, x: x[:, ::2] * 2,
         [arr(512, 1024).astype(np.float64)]),
    ]


def main():
    torch, args = one_thread_args(15)
    run_rows(torch, rows(), args.rounds, args.only)


if __name__ == "__main__":
    main()
