"""Complex linear algebra (src/aten/native/linalg_complex.c) against PyTorch in the same
process, one thread: each row's ratio (PyTorch's time / ours, > 1: we are faster), the two
libraries alternating block by block and each one's fastest block counting; the range is
that of the per-round ratios (their second smallest and second largest).  The matrix is
benchmarks/test_bench_linalg_complex.py's Hermitian positive-definite one.

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_linalg_complex.py
    ... --rounds 20 --only solve,inv --sizes 64,128

Needs PyTorch."""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402
from _interleave import best_block, one_thread_args  # noqa: E402

ROWS = ["solve", "inv", "det", "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals"]


def hpd(n):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    a = a @ a.conj().T + n * np.eye(n)
    return a / np.exp(np.linalg.slogdet(a)[1] / n)


def main():
    torch, args = one_thread_args(15, ("--sizes", "16,64"))
    only = [r for r in args.only.split(",") if r]
    for dtype in (np.complex128, np.complex64):
        for n in map(int, args.sizes.split(",")):
            a = hpd(n).astype(dtype)
            for name in ROWS:
                if only and name not in only:
                    continue
                libs = []
                for lib in (torch, pytorchlite):
                    x, b = lib.from_numpy(a.copy()), lib.from_numpy(np.ones((n, 1), dtype))
                    f = getattr(lib.linalg, name)
                    libs.append((lambda f=f, x=x, b=b: f(x, b)) if name == "solve"
                                else (lambda f=f, x=x: f(x)))
                for f in libs:
                    f()
                t0 = time.perf_counter()
                libs[1]()
                calls = max(1, int(0.01 / max(time.perf_counter() - t0, 1e-7)))
                rounds = [[best_block(f, calls) for f in libs] for _ in range(args.rounds)]
                tt, tp = (min(r[i] for r in rounds) for i in (0, 1))
                ratios = sorted(r[0] / r[1] for r in rounds)
                lo, hi = ratios[min(1, len(ratios) - 1)], ratios[max(-2, -len(ratios))]
                print(f"{name:9s} {n:4d} {np.dtype(dtype).name:10s} torch {tt * 1e6:9.1f} us"
                      f"  ours {tp * 1e6:9.1f} us  ratio {tt / tp:5.2f} "
                      f"(rounds {lo:.2f}-{hi:.2f})", flush=True)


if __name__ == "__main__":
    main()
