"""Complex matrix products against PyTorch in the same process, one thread: each shape's
ratio (PyTorch's time / ours, > 1: we are faster), the libraries alternating block by block
and each one's fastest block counting; the range is that of the per-round ratios (their
second smallest and second largest), as the machine's load moves them.

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_complex_gemm.py
    ... --rounds 40 --only mm

Rows: mm of squares (64, 256, 512), mm with B^H (an mH view), bmm of 64 matrices of
64 x 64, mv of 1024 x 1024, batches of small matrices (2, 4, 8, 16 squares, 8 x 8 with B^H,
3 x 5 @ 5 x 7: gemm_complex.c's tiny kernels), in complex64 and complex128.  Needs
PyTorch."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402
from _interleave import best_block, crandn, one_thread_args  # noqa: E402

# (name, shape of a, shape of b, b as its mH)
ROWS = [("mm", (64, 64), (64, 64), False), ("mm", (256, 256), (256, 256), False),
        ("mm", (512, 512), (512, 512), False), ("mm B^H", (256, 256), (256, 256), True),
        ("bmm", (64, 64, 64), (64, 64, 64), False), ("mv", (1024, 1024), (1024,), False),
        ("bmm", (10000, 2, 2), (10000, 2, 2), False), ("bmm", (5000, 4, 4), (5000, 4, 4), False),
        ("bmm", (2500, 8, 8), (2500, 8, 8), False), ("bmm", (500, 16, 16), (500, 16, 16), False),
        ("bmm B^H", (2500, 8, 8), (2500, 8, 8), True), ("bmm", (1000, 3, 5), (1000, 5, 7), False)]


def main():
    torch, args = one_thread_args(20)
    for dtype in (np.complex64, np.complex128):
        for name, sa, sb, herm in ROWS:
            if args.only and not name.startswith(args.only):
                continue
            a, b = crandn(sa, dtype, 0), crandn(sb, dtype, 1)
            libs = []
            for lib in (torch, pytorchlite):
                x, y = lib.from_numpy(a.copy()), lib.from_numpy(b.copy())
                libs.append((lambda x=x, y=y: x @ y.mH) if herm else (lambda x=x, y=y: x @ y))
            flops = 8 * np.prod(sa) * sb[-1] if len(sb) > 1 else 8 * np.prod(sa)
            calls = max(1, int(2e8 / flops))
            for f in libs:
                f()
            rounds = []
            for _ in range(args.rounds):
                rounds.append([best_block(f, calls) for f in libs])
            tt, tp = (min(r[i] for r in rounds) for i in (0, 1))
            ratios = sorted(r[0] / r[1] for r in rounds)
            lo, hi = ratios[min(1, len(ratios) - 1)], ratios[max(-2, -len(ratios))]
            print(f"{name:7s} {'x'.join(map(str, sa))} @ {'x'.join(map(str, sb))} "
                  f"{np.dtype(dtype).name:10s} torch {tt * 1e3:8.3f} ms  ours {tp * 1e3:8.3f} ms"
                  f"  ratio {tt / tp:5.2f} (rounds {lo:.2f}-{hi:.2f})", flush=True)


if __name__ == "__main__":
    main()
