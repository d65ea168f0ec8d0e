"""PyTorch's time / ours for the single-thread rows that issue 16's sweep left at or below
1.02 (repeat, flip, randperm, column and row extremes, sums, sigmoid, erf and erfinv,
log_softmax forward+backward, casts (to bfloat16 too), float16 and bfloat16 sums, eigvals,
special.i1e and i0e, kthvalue, median), the two libraries alternating call by call in one
process, fastest of --reps each in thread CPU time:

    taskset -c 1 python benchmarks/interleaved_sweep_rows.py [--only amax] [--reps 40]

Run it once with main's build on PYTHONPATH and once with a branch's, alternately, to compare
builds.  Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import calls_main  # noqa: E402


def randn(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def ints(n):
    return np.random.default_rng(0).integers(-100, 100, n).astype(np.int64)


def unary(op, x):
    return lambda L: (lambda t=L.from_numpy(x.copy()): getattr(t, op)())


def call(fn, *arrays):
    """make(lib): fn(lib, *tensors of arrays) ready to time."""
    def make(L):
        ts = [L.from_numpy(a.copy()) for a in arrays]
        return lambda: fn(L, *ts)
    return make


def lowp(fn, dtype):
    """make(lib): fn of 1e6 normal values as a float16 or bfloat16 tensor"""
    def make(L):
        x = L.from_numpy(randn(10**6)).to(getattr(L, dtype))
        return lambda: fn(x)
    return make


def softmax_step(shape, dim):
    def make(L):
        x = L.from_numpy(randn(shape)).requires_grad_()
        g = L.from_numpy(randn(shape, seed=1))

        def step():
            x.grad = None
            L.nn.functional.log_softmax(x, dim).backward(g)
        return step
    return make


def rows():
    t = np.tanh(np.random.default_rng(0).standard_normal(10**6) * 3)
    s = np.random.default_rng(0).standard_normal(10**6) * 3
    u = np.random.default_rng(0).uniform(-1, 1, 10**6)
    return [
        ("repeat(2, 1) 1024x1024 f32", call(lambda L, x: x.repeat(2, 1), randn((1024, 1024)))),
        ("repeat(2, 1) 256x256 f32", call(lambda L, x: x.repeat(2, 1), randn((256, 256)))),
        ("flip(1) 1024x1024 f32", call(lambda L, x: x.flip(1), randn((1024, 1024)))),
        ("flip(1) 256x256 f32", call(lambda L, x: x.flip(1), randn((256, 256)))),
        ("flip(0) 65536 f32", call(lambda L, x: x.flip(0), randn(65536))),
        ("randperm 100000", lambda L: (lambda: L.randperm(100000))),
        ("randperm 1000", lambda L: (lambda: L.randperm(1000))),
        ("amax(0) 8x40000 int64", call(lambda L, x: x.amax(0),
                                       (randn((8, 40000)) * 100).astype(np.int64))),
        ("amax(0) 2x40000 int64", call(lambda L, x: x.amax(0),
                                       (randn((2, 40000)) * 100).astype(np.int64))),
        ("sum() 4096x1024 f32", call(lambda L, x: x.sum(), randn((4096, 1024)))),
        ("sigmoid 1e6 f64", call(lambda L, x: L.sigmoid(x), s)),
        ("log_softmax fwd+bwd [32,21,64,64] dim 1", softmax_step((32, 21, 64, 64), 1)),
        ("sum(1) 1e6 int64", call(lambda L, x: x.view(1000, 1000).sum(1), ints(10**6))),
        ("mul 1e6 f32", call(lambda L, x, y: x * y, randn(10**6), randn(10**6))),
        ("prod(0) 16x65536 f32", call(lambda L, x: x.prod(0),
                                      1 + randn((16, 65536)) / 1000)),
        ("eigvals 64x64 f64", call(lambda L, x: L.linalg.eigvals(x),
                                   np.random.default_rng(0).standard_normal((64, 64)))),
        ("mean((2, 3)) 32x64x32x32", call(lambda L, x: x.mean((2, 3)),
                                          randn((32, 64, 32, 32)))),
        ("float32 -> int32 1e6", call(lambda L, x: x.int(), randn(10**6) * 100)),
        ("float32 -> bfloat16 1e6", call(lambda L, x: x.bfloat16(), randn(10**6))),
        ("float64 -> bfloat16 1e6", call(lambda L, x: x.bfloat16(),
                                         randn(10**6).astype(np.float64))),
        ("sum() 1e6 f16", lowp(lambda x: x.sum(), "float16")),
        ("sum(1) 1000x1000 f16", lowp(lambda x: x.view(1000, 1000).sum(1), "float16")),
        ("sum() 1e6 bf16", lowp(lambda x: x.sum(), "bfloat16")),
        ("sum(1) 1000x1000 bf16", lowp(lambda x: x.view(1000, 1000).sum(1), "bfloat16")),
        ("float32 -> int64 1e5", call(lambda L, x: x.long(), randn(10**5) * 100)),
        ("float64 -> int64 1e5", call(lambda L, x: x.long(),
                                      randn(10**5).astype(np.float64) * 100)),
        ("amax(-1) 4096x1024 f32", call(lambda L, x: x.amax(-1), randn((4096, 1024)))),
        ("erf 1e6 f64", call(lambda L, x: L.erf(x), s)),
        ("erfinv 1e6 f64", call(lambda L, x: L.erfinv(x), t)),
        ("erfinv (uniform) 1e6 f64", call(lambda L, x: L.erfinv(x), u)),
        ("special.i1e 1e6 f32", call(lambda L, x: L.special.i1e(x), s.astype(np.float32))),
        ("special.i0e 1e6 f32", call(lambda L, x: L.special.i0e(x), s.astype(np.float32))),
        ("kthvalue(5, -1) 1024x1024 f32", call(lambda L, x: x.kthvalue(5, -1),
                                               randn((1024, 1024)))),
        ("kthvalue(5, -1) 16384x64 f32", call(lambda L, x: x.kthvalue(5, -1),
                                              randn((16384, 64)))),
        ("median(-1) 1024x1024 f32", call(lambda L, x: x.median(-1), randn((1024, 1024)))),
    ]


def main(argv=None):
    calls_main(__doc__, rows, 40, 40, argv)


if __name__ == "__main__":
    main()
