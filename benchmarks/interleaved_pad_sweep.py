"""PyTorch's time / ours for every pad row: constant, reflect, replicate and circular, in 1, 2
and 3 dims, float32, float64 and complex64, forward alone and forward with backward
(autograd.grad), contiguous and channels-last (the 2-d pads), on 8x16x64x64 and 1x3x224x224
(the 1-d pads pad (N C, H, W) by (3, 3), the 2-d ones (N, C, H, W) by (2, 2, 2, 2), the 3-d
ones (1, N, C, H, W) by 1 everywhere), the two libraries interleaved call by call in one
process, fastest of --reps each (Note [Pad backward by input rows] in
src/aten/native/pad_backward.c, Note [Pads keep channels-last] in resample.c):

    taskset -c 1 python benchmarks/interleaved_pad_sweep.py [--only SUBSTRING]

One thread times its CPU time.  Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _interleave import calls_main, crandn  # noqa: E402

SHAPES = {"8x16x64x64": (8, 16, 64, 64), "1x3x224x224": (1, 3, 224, 224)}
PADS = {"1d": (3, 3), "2d": (2, 2, 2, 2), "3d": (1, 1, 1, 1, 1, 1)}


def operand(lib, a, nd, channels_last, grad):
    t = lib.from_numpy(a.copy())
    if channels_last:
        t = t.contiguous(memory_format=lib.channels_last)
    t = t.flatten(0, 1) if nd == "1d" else t.unsqueeze(0) if nd == "3d" else t
    return t.requires_grad_(True) if grad else t


def row(mode, nd, a, channels_last, part):
    pad = PADS[nd]

    def make(lib):
        x = operand(lib, a, nd, channels_last, part == "backward")
        f = lib.nn.functional.pad
        if part == "forward":
            return lambda: f(x, pad, mode=mode)
        gy = lib.ones_like(f(x, pad, mode=mode))
        return lambda: lib.autograd.grad(f(x, pad, mode=mode), x, gy)
    return make


def rows():
    out = []
    for mode in ("constant", "reflect", "replicate", "circular"):
        for nd in PADS:
            for dt in (np.float32, np.float64, np.complex64):
                for sname, shape in SHAPES.items():
                    a = (crandn(shape, dt, 0) if dt == np.complex64 else
                         np.random.default_rng(0).standard_normal(shape).astype(dt))
                    for cl in ((False, True) if nd == "2d" else (False,)):
                        for part in ("forward", "backward"):
                            name = (f"{mode} {nd} {np.dtype(dt).name} {sname}"
                                    f"{' channels_last' if cl else ''} {part}")
                            out.append((name, row(mode, nd, a, cl, part)))
    return out


if __name__ == "__main__":
    calls_main(__doc__, rows, 15, 56)
