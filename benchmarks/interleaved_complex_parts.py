"""Complex ops made of the real kernels on the parts (Note [Complex ops by parts] in
src/aten/native/complex_parts.c) and complex parameters in the optimizers (Note [Complex
parameters] in pytorchlite/optim/_functional.py) against PyTorch in the same process, one
thread: each row's ratio (PyTorch's time / ours, > 1: we are faster), the libraries
alternating call by call and each one's fastest call in thread CPU time counting (other
processes on the core do not inflate it).

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_complex_parts.py
    ... --reps 40 --only conv2d

Needs PyTorch."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402
from _interleave import calls_main, crandn  # noqa: E402


def _conv_step(t, x, w, b, conv):
    """forward and backward of sum(|conv(x, w, b)|^2)"""
    x, w, b = (a.detach().requires_grad_(True) for a in (x, w, b))
    out = conv(t, x, w, b)
    (out.real ** 2 + out.imag ** 2).sum().backward()
    return w.grad


def _adam(t, p, g):
    p = p.clone().requires_grad_(True)
    opt = t.optim.Adam([p], lr=1e-3)
    for _ in range(4):
        p.grad = g
        opt.step()
    return p


def rows():
    """(name, make): make(lib) returns the call to time"""
    c64 = np.complex64
    c1 = lambda t, x, w, b: t.nn.functional.conv1d(x, w, b, padding=1)  # noqa: E731
    c2 = lambda t, x, w, b: t.nn.functional.conv2d(x, w, b, padding=1)  # noqa: E731
    a1 = [crandn((8, 16, 256), c64, 0), crandn((32, 16, 3), c64, 1), crandn(32, c64, 2)]
    a2 = [crandn((4, 8, 32, 32), c64, 0), crandn((16, 8, 3, 3), c64, 1), crandn(16, c64, 2)]
    table = [
        ("conv1d 8x16x256 k3 complex64", lambda t, x, w, b: c1(t, x, w, b), a1),
        ("conv2d 4x8x32x32 k3 complex64", lambda t, x, w, b: c2(t, x, w, b), a2),
        ("conv2d fwd+bwd 4x8x32x32 complex64",
         lambda t, x, w, b: _conv_step(t, x, w, b, c2), a2),
        ("embedding 10000x64 [4096] complex64",
         lambda t, w, i: t.nn.functional.embedding(i, w),
         [crandn((10000, 64), c64, 0), np.random.default_rng(1).integers(0, 10000, 4096)]),
        ("unfold 4x8x32x32 k3 complex64", lambda t, x: t.nn.functional.unfold(x, 3),
         [crandn((4, 8, 32, 32), c64, 0)]),
        ("Adam 4 steps 256x256 complex64", _adam,
         [crandn((256, 256), c64, 0), crandn((256, 256), c64, 1)]),
    ]

    def make(fn, arrays):
        def build(lib):
            xs = [lib.from_numpy(a.copy()) for a in arrays]
            return lambda: fn(lib, *xs)
        return build
    return [(name, make(fn, arrays)) for name, fn, arrays in table]


if __name__ == "__main__":
    calls_main(__doc__, rows, 20, 36)
