"""conj() as a view (Note [Conjugate views] in src/aten/native/conjugate.c) against PyTorch in
the same process, one thread: x.conj(), x.mH, x.mH @ y and ops on conj operands, each row's
ratio (PyTorch's time / ours, > 1: we are faster), the libraries alternating block by block.

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_conj_views.py

Needs PyTorch."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _interleave import crandn, one_thread_args, run_rows  # noqa: E402


def rows():
    out = []
    for dtype in (np.complex64, np.complex128):
        tag = np.dtype(dtype).name
        a, b = crandn((256, 256), dtype, 0), crandn((256, 256), dtype, 1)
        big = crandn((1024, 1024), dtype, 2)
        out += [(f"x.conj() 1024x1024 {tag}", lambda lib, x: x.conj(), [big]),
                (f"x.mH 1024x1024 {tag}", lambda lib, x: x.mH, [big]),
                (f"x.conj() + y 256x256 {tag}", lambda lib, x, y: x.conj() + y, [a, b]),
                (f"x.mH @ y 256x256 {tag}", lambda lib, x, y: x.mH @ y, [a, b]),
                (f"x.conj().sum() 1024x1024 {tag}", lambda lib, x: x.conj().sum(), [big])]
    c, d = crandn((1024, 1024), np.complex64, 3), crandn((1024, 1024), np.complex64, 4)
    out.append(("x.mH @ y 1024x1024 complex64", lambda lib, x, y: x.mH @ y, [c, d]))
    return out


def main():
    torch, args = one_thread_args(10)
    run_rows(torch, rows(), args.rounds, args.only)


if __name__ == "__main__":
    main()
