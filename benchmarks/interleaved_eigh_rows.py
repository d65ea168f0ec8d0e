"""PyTorch's time / ours for float32 (and float64) eigh and eigvalsh of the SPD matrices of
test_bench_linalg.py (64x64, 128x128, 256x256), the two libraries interleaved call by call in
one process, fastest of --reps rounds of --calls calls each (docs/performance.md, "Float32
eigh in float32"):

    taskset -c 1 python benchmarks/interleaved_eigh_rows.py [--threads 1] [--sizes 64,256]
        [--dtypes float32,float64]

Needs PyTorch (pip install torch==2.13.0)."""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402


def _spd(n):
    a = np.random.default_rng(0).standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def _fastest(fn, x, calls):
    best = float("inf")
    for _ in range(calls):
        t = time.perf_counter()
        fn(x)
        best = min(best, time.perf_counter() - t)
    return best


def main():
    import torch
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--sizes", default="64,128,256")
    p.add_argument("--dtypes", default="float32")
    p.add_argument("--reps", type=int, default=7)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    pytorchlite.set_num_threads(args.threads)
    for n in [int(s) for s in args.sizes.split(",")]:
        for dtype in args.dtypes.split(","):
            a = _spd(n).astype(dtype)
            ta, pa = torch.from_numpy(a), pytorchlite.tensor(a)
            for name in ("eigh", "eigvalsh"):
                ft, fp = getattr(torch.linalg, name), getattr(pytorchlite.linalg, name)
                calls = 20 if n >= 256 else 100
                bt = bp = float("inf")
                for _ in range(args.reps):
                    bt = min(bt, _fastest(ft, ta, calls))
                    bp = min(bp, _fastest(fp, pa, calls))
                print(f"{name:8s} {n:4d}x{n:<4d} {dtype}: torch {bt * 1e6:8.1f} us, ours "
                      f"{bp * 1e6:8.1f} us, ratio {bt / bp:.2f}", flush=True)


if __name__ == "__main__":
    main()
