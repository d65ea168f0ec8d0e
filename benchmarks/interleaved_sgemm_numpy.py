"""test_bench_gemm.py's SGEMM shapes on one thread: pytorchlite and NumPy (OpenBLAS) in one
process, calls alternating block by block, each library's fastest block of thread CPU time;
GFLOP/s of each and NumPy's time / ours (> 1: pytorchlite is faster).

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/interleaved_sgemm_numpy.py --rounds 10

On a shared host separate pytest-benchmark rows move by +-10% with the load; here the load
changes both alike."""
import argparse
import os
import sys
import time

# one OpenBLAS thread: thread CPU time would not see a second one's work
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _interleave import best_block  # noqa: E402
from test_bench_gemm import SHAPES  # noqa: E402

import pytorchlite  # noqa: E402


def measure(m, k, n, bt, rounds):
    """(NumPy's, pytorchlite's) fastest seconds per call of m x k @ k x n (B transposed when
    bt)."""
    g = np.random.default_rng(0)
    a = g.standard_normal((m, k)).astype(np.float32)
    b = g.standard_normal((n, k) if bt else (k, n)).astype(np.float32)
    nb = b.T if bt else b
    pa = pytorchlite.from_numpy(a)
    pb = pytorchlite.from_numpy(b).t() if bt else pytorchlite.from_numpy(b)
    fns = [lambda: a @ nb, lambda: pa @ pb]
    calls = max(1, int(3e7 / (m * n * k)))
    best = [float("inf"), float("inf")]
    for fn in fns:
        best_block(fn, calls)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], best_block(fn, calls, time.thread_time))
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--max-flops", type=float, default=float("inf"),
                    help="skip the shapes of more multiply-adds than this")
    args = ap.parse_args(argv)
    pytorchlite.set_num_threads(1)
    print(f"one thread, rounds {args.rounds}; GFLOP/s NumPy, pytorchlite; NumPy's time / ours")
    for m, k, n, bt in SHAPES:
        if m * k * n > args.max_flops:
            continue
        t_np, t_ours = measure(m, k, n, bt, args.rounds)
        what = f"({n}x{k})^T" if bt else f"{k}x{n}"
        flops = 2.0 * m * n * k
        print(f"{m}x{k} @ {what:12s} {flops / t_np / 1e9:6.1f} {flops / t_ours / 1e9:6.1f}  "
              f"{t_np / t_ours:5.3f}", flush=True)


if __name__ == "__main__":
    main()
