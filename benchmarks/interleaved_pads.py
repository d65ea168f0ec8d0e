"""The reflection, replication and circular pads and nearest upsampling (Note [Gathers by
runs] in src/aten/native/resample.c) on float32 inputs, contiguous and strided, and on complex
ones; the four pads on channels-last inputs and their backwards (forward and backward timed
together: Note [Pad backward by input rows] in src/aten/native/pad_backward.c), against
PyTorch in the same process, one thread: each row's ratio (PyTorch's time / ours, > 1: we
are faster), the libraries alternating block by block and each one's fastest block counting;
the range is that of the per-round ratios (their second smallest and second largest).
Blocks are timed in the thread's CPU time (--clock thread, the default) or wall time (wall).

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_pads.py
    ... --rounds 40 --only "reflect 2d"

Needs PyTorch."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import pytorchlite  # noqa: E402
from _interleave import crandn, one_thread_args, run_rows  # noqa: E402


def rows():
    """(name, function of (lib, tensors), arrays)"""
    g = np.random.default_rng(0)
    f4 = g.standard_normal((4, 16, 64, 64)).astype(np.float32)
    pads = {"1d": (3, 3), "2d": (2, 2, 2, 2), "3d": (1, 1, 1, 1, 1, 1)}
    out = []
    for mode in ("reflect", "replicate", "circular"):
        for nd, p in pads.items():
            def fwd(t, a, p=p, mode=mode, nd=nd):
                a = a if nd == "3d" else a.flatten(0, 1) if nd == "2d" else a.flatten(0, 2)
                return t.nn.functional.pad(a, p, mode=mode)

            def strided(t, a, p=p, mode=mode, nd=nd):
                return fwd(t, a.transpose(-1, -2), p, mode, nd)
            out += [(f"{mode} {nd} 4x16x64x64 float32", fwd, [f4]),
                    (f"{mode} {nd} 4x16x64x64 float32 transposed", strided, [f4])]
        for dt in (np.complex64, np.complex128):
            c = crandn((2, 16, 64, 64), dt, 1)
            out += [(f"{mode} 2d 2x16x64x64 {np.dtype(dt).name}",
                     lambda t, a, mode=mode: t.nn.functional.pad(a, (2, 2, 2, 2), mode=mode),
                     [c]),
                    (f"{mode} 2d 2x16x64x64 {np.dtype(dt).name} transposed",
                     lambda t, a, mode=mode: t.nn.functional.pad(a.transpose(-1, -2),
                                                                 (2, 2, 2, 2), mode=mode),
                     [c])]
    nhwc = np.ascontiguousarray(f4.transpose(0, 2, 3, 1))   # permuted back: channels-last
    for mode in ("constant", "reflect", "replicate", "circular"):
        def cl(t, a, mode=mode):
            return t.nn.functional.pad(a.permute(0, 3, 1, 2), (2, 2, 2, 2), mode=mode)

        def backward(t, a, mode=mode):
            x = a.detach().requires_grad_()
            y = t.nn.functional.pad(x, (2, 2, 2, 2), mode=mode)
            return t.autograd.grad(y, x, t.ones_like(y))

        def cl_backward(t, a, mode=mode):
            return backward(t, a.permute(0, 3, 1, 2), mode)
        c = crandn((2, 16, 64, 64), np.complex64, 2)
        out += [(f"{mode} 2d 4x16x64x64 float32 channels_last", cl, [nhwc]),
                (f"{mode} 2d 4x16x64x64 float32 backward", backward, [f4]),
                (f"{mode} 2d 4x16x64x64 float32 channels_last backward", cl_backward, [nhwc]),
                (f"{mode} 2d 2x16x64x64 complex64 backward", backward, [c])]
    out += [("nearest x2 4x16x64x64 float32",
             lambda t, a: t.nn.functional.interpolate(a, scale_factor=2, mode="nearest"), [f4]),
            ("nearest to 48x80 4x16x64x64 float32",
             lambda t, a: t.nn.functional.interpolate(a, size=(48, 80), mode="nearest"), [f4])]
    return out


if __name__ == "__main__":
    TORCH, ARGS = one_thread_args(20, ("--clock", "thread"))
    run_rows(TORCH, rows(), ARGS.rounds, ARGS.only,
             time.thread_time if ARGS.clock == "thread" else time.perf_counter)
