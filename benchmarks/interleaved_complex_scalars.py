"""Ops with a complex Scalar argument (Note [Complex Scalars] in src/aten/ivalue.h) against
PyTorch in the same process, one thread: each row's ratio (PyTorch's time / ours, > 1: we are
faster), the libraries alternating block by block and each one's fastest block counting; the
range is that of the per-round ratios (their second smallest and second largest).

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_complex_scalars.py
    ... --rounds 40 --only addmm

A row whose op pytorchlite refuses (a build from before complex Scalars) prints its error.
The last row, x + y of 8 float32 elements, is the dispatcher's per-call cost (its argument
keys now look at the Scalar arguments too).  Needs PyTorch."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402
from _interleave import crandn, one_thread_args, run_rows  # noqa: E402


def rows():
    """(name, function of (lib, arrays), arrays)"""
    c64, c128 = np.complex64, np.complex128
    m = np.random.default_rng(3).standard_normal(1 << 20) > 0
    out = []
    for n, dt in ((64, c128), (256, c64), (256, c128)):
        out.append((f"addmm {n} {np.dtype(dt).name} beta=1j alpha=2-1j",
                    lambda t, a, b, c: t.addmm(c, a, b, beta=1j, alpha=2 - 1j),
                    [crandn((n, n), dt, s) for s in range(3)]))
    out.append(("addmv 1024 complex128 alpha=1j",
                lambda t, a, v: t.addmv(v, a, v, alpha=1j),
                [crandn((1024, 1024), c128, 0), crandn(1024, c128, 1)]))
    for dt in (c64, c128):
        name = np.dtype(dt).name
        x, y = crandn(1 << 20, dt, 0), crandn(1 << 20, dt, 1)
        out += [(f"add 1M {name} alpha=2-1j", lambda t, a, b: t.add(a, b, alpha=2 - 1j), [x, y]),
                (f"lerp 1M {name} w=0.3-0.7j", lambda t, a, b: t.lerp(a, b, 0.3 - 0.7j), [x, y]),
                (f"addcmul 1M {name} value=1j",
                 lambda t, a, b: t.addcmul(a, a, b, value=1j), [x, y]),
                (f"pow 1M {name} exponent=1.5-0.5j", lambda t, a: t.pow(a, 1.5 - 0.5j), [x]),
                (f"masked_fill 1M {name} 2-1j",
                 lambda t, a, mm: a.masked_fill(mm, 2 - 1j), [x, m]),
                (f"where 1M {name} x or 2-1j",
                 lambda t, a, mm: t.where(mm, a, 2 - 1j), [x, m]),
                (f"full 1M {name} 1j",
                 lambda t, a: t.full((1 << 20,), 1j, dtype=a.dtype), [x])]
    out.append(("x + y, 8 float32", lambda t, a, b: a + b,
                [np.ones(8, np.float32), np.ones(8, np.float32)]))
    return out


def main():
    torch, args = one_thread_args(20)
    run_rows(torch, rows(), args.rounds, args.only)


if __name__ == "__main__":
    main()
